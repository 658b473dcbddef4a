/**
 * The one way from the relay to the platform, for `/collect` and the proxy alike: the fixed
 * path of the endpoint table, the platform key, a body serialised once by the caller, a timeout
 * that aborts, and the platform's 429 read once (src/api/retry.ts) into a hold shared by every
 * route. Nothing of the caller's request (credentials, cookies, hop-by-hop or X-Forwarded-*
 * headers, query, path) is copied.
 * @module
 */
import { ENDPOINT_LIST, rateLimitBody, type Endpoint, type EndpointId } from '../../api/index.js';
import { parseJsonOrUndefined } from '../../api/objects.js';
import { tryInSeconds } from '../../api/retry.js';
import { RelayHttpError } from '../core/errors.js';
import type { UpstreamCall } from '../core/observe.js';
import { type Breaker, type CallSource, sharedBreaker } from './breaker.js';
import type { Pacer } from '../state/outbox.js';
import { readText, UpstreamTimeout, type Transport, type TransportAnswer } from './transport.js';

/** When calls may go upstream again (ms since epoch); one object shared by every caller of a platform. */
export interface Backoff {
  until: number;
}

const backoffs = new Map<string, Backoff>();
/** The one backoff of upstream `baseUrl` in this process or isolate. */
export function sharedBackoff(baseUrl: string): Backoff {
  const known = backoffs.get(baseUrl);
  if (known !== undefined) return known;
  const backoff = { until: 0 };
  backoffs.set(baseUrl, backoff);
  return backoff;
}

/** A proxy call whose timer wakes this much after its place in the window asks again (the window's margin). */
const LATE_WAKE_MS = 30;
/** How many places a proxy call asks for at most before it goes anyway. */
const MAX_PROXY_ASKS = 3;

export interface UpstreamOptions {
  /** the platform's origin and base path, no trailing slash */
  baseUrl: string;
  apiKey: string;
  transport: Transport;
  /** how long to wait for the answer's headers (and a small body) */
  timeoutMs: number;
  backoff: Backoff;
  /** the relay-wide breaker of platform refusals @default one per `baseUrl` in this process or isolate */
  breaker?: Breaker | undefined;
  now: () => number;
  /** called once per upstream call, answered or not (metrics) */
  onCall?: ((call: UpstreamCall) => void) | undefined;
  /**
   * The deployment's budget of platform calls (a Durable Object on Workers): each call takes the
   * next free slot first, as `proxy` priority, counted in the window deliveries share (it waits for
   * it, 2 s at most: past that, and during the platform's own hold, `try-in-seconds`, the relay
   * answers 429 itself); a 429 is shared with every caller of the key.
   */
  pacer?: Pacer | undefined;
}

/** The platform's answer; on a 429, `holdSeconds` is how long the relay now holds calls. */
export interface UpstreamAnswer extends TransportAnswer {
  holdSeconds?: number;
}

/** Who a call is for, and how long it may wait for the breaker. */
export interface CallOptions {
  /** browser traffic pauses before proxy traffic @default 'proxy' */
  from?: CallSource;
  /** ms since epoch until which a call may wait for the breaker to let it go @default now (no wait) */
  waitUntil?: number;
  /** this call's timeout, when shorter than the caller's (a delivery's lease may have less time left) */
  timeoutMs?: number;
  /** the caller paced itself (the deliverer takes `deliver` slots): no `proxy` slot is taken @default false */
  paced?: boolean;
}

export interface Upstream {
  /**
   * Sends `body` (JSON text) to `endpoint`. Resolves with any answer the platform gave; a 429's
   * body is read and the shared hold pushed out. Rejects with a {@link RelayHttpError}: 504
   * `upstream_timeout` (the call was aborted), 502 `upstream_unreachable`, or 503
   * `upstream_paused` (the breaker of platform refusals did not let the call go; nothing was sent).
   */
  call(endpoint: Endpoint<EndpointId>, body: string, options?: CallOptions): Promise<UpstreamAnswer>;
  /** Milliseconds left of the platform's 429 hold; 0 when calls may go. */
  holdMs(): number;
  readonly backoff: Backoff;
}

export function createUpstream(options: UpstreamOptions): Upstream {
  const { transport, timeoutMs, backoff, now, onCall } = options;
  const breaker = options.breaker ?? sharedBreaker(options.baseUrl);
  const urls = new Map(ENDPOINT_LIST.map((endpoint) => [endpoint.id, `${options.baseUrl}${endpoint.path}`]));
  const headers = { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': options.apiKey };
  const clockMs = () => (typeof performance === 'undefined' ? Date.now() : performance.now());

  /** Waits (until `waitUntil`) for the breaker to let a call from `from` go. */
  async function admit(endpoint: Endpoint<EndpointId>, from: CallSource, waitUntil: number): Promise<void> {
    for (;;) {
      const wait = breaker.waitMs(from, now());
      if (wait === 0) return;
      const left = waitUntil - now();
      if (left <= 0 || (wait > 25 && wait > left)) {
        throw new RelayHttpError(
          503,
          'upstream_paused',
          `the relay paused ${endpoint.id} calls: the platform refused too many requests in the last 15 s, and more would get the key shut out`,
          { retryAfter: Math.max(1, Math.ceil(wait / 1000)) },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, left)));
    }
  }

  /** A 429 the relay answers itself while the key is held: the platform is not called. */
  const held = (waitMs: number): UpstreamAnswer => {
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    backoff.until = Math.max(backoff.until, now() + waitMs);
    return {
      status: 429,
      contentType: 'application/json',
      retryAfter: String(seconds),
      body: new TextEncoder().encode(JSON.stringify(rateLimitBody(seconds))),
      holdSeconds: seconds,
    };
  };

  /**
   * Takes the proxy call's place in the pacer's window (state/pace.ts): 0 once it may go, else how
   * long the key is held (nothing taken). A place a little later is waited for; a timer that wakes
   * later than the window's margin allows (a busy event loop) asks again, as the call would no
   * longer be where it was counted. A pacer that cannot be reached does not stop the call: the
   * platform's own limit still holds.
   */
  async function proxySlot(pacer: Pacer): Promise<number> {
    for (let tries = 0; tries < MAX_PROXY_ASKS; tries++) {
      const wait = await pacer.take(now(), 'proxy').catch(() => 0);
      if (wait >= 0) return wait;
      const slot = now() - wait;
      await new Promise((resolve) => setTimeout(resolve, -wait));
      if (now() - slot <= LATE_WAKE_MS) return 0;
    }
    return 0;
  }

  async function call(endpoint: Endpoint<EndpointId>, body: string, callOptions: CallOptions = {}): Promise<UpstreamAnswer> {
    if (options.pacer && !callOptions.paced) {
      const wait = await proxySlot(options.pacer);
      if (wait > 0) return held(wait);
    }
    const from = callOptions.from ?? 'proxy';
    await admit(endpoint, from, callOptions.waitUntil ?? now());
    breaker.start(from);
    const started = clockMs();
    let answer: UpstreamAnswer;
    try {
      answer = await transport({ method: endpoint.method, url: urls.get(endpoint.id) as string, headers, body, timeoutMs: callOptions.timeoutMs ?? timeoutMs });
    } catch (cause) {
      breaker.end(from, 0, now());
      onCall?.({ endpoint: endpoint.id, status: 0, ms: clockMs() - started });
      if (cause instanceof UpstreamTimeout) {
        throw new RelayHttpError(
          504,
          'upstream_timeout',
          `the platform did not answer ${endpoint.id} within ${callOptions.timeoutMs ?? timeoutMs} ms; retry later`,
          {
            cause,
          },
        );
      }
      throw new RelayHttpError(502, 'upstream_unreachable', `the platform could not be reached for ${endpoint.id}; retry later`, { cause });
    }
    breaker.end(from, answer.status, now());
    onCall?.({ endpoint: endpoint.id, status: answer.status, ms: clockMs() - started });
    if (answer.status !== 429) return answer;
    // A 429 body is a few bytes: read it for `try-in-seconds`, hold, and hand it on as text.
    const text = await readText(answer);
    // A 429 body is JSON from the platform or a relay; anything else has no wait in it.
    const at = now();
    const seconds = tryInSeconds(parseJsonOrUndefined(text), answer.retryAfter, at);
    backoff.until = Math.max(backoff.until, at + seconds * 1000);
    // The key's pacer holds every caller, and learns a wider margin (state/margin.ts).
    await options.pacer?.hold(at + seconds * 1000, at).catch(() => {});
    const holdSeconds = Math.max(1, Math.ceil(seconds));
    return { ...answer, body: new TextEncoder().encode(text), retryAfter: String(holdSeconds), holdSeconds };
  }

  return { call, holdMs: () => Math.max(0, backoff.until - now()), backoff };
}
