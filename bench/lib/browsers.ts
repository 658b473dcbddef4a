/**
 * Simulated browsers for the delivery bench, sending what the snippet sends, at a fixed offered
 * rate (open loop: items are made on schedule whatever the relay answers).
 *
 * Each visitor has its own address (`X-Forwarded-For`, which the relay believes from loopback
 * with `RELAY_TRUST_PROXY=127.0.0.1`), its own `queue` id and email. Its first item is an
 * identify with a valid `user_hash`; its tracks then name the person (`person` and `user_hash`,
 * as the snippet fills them in once the visitor is known) and the browser sends back the
 * relay's `identity` token. After `itemsPerVisitor` items the visitor leaves and a new one
 * takes its place, so identifies stay a steady share of the traffic at any rate. Like the
 * snippet, a browser has one request in flight; what it made meanwhile waits for the answer;
 * items answered `retry` (or a failed request) stay queued and go again after the relay's
 * `Retry-After`, or without one after the snippet's own backoff.
 *
 * Item ids are v7 UUIDs, as the snippet makes them. Each track carries its id in the attribute
 * `str:cm:item` and each identify in the person field `str::first`, so the platform's state
 * says which items arrived, when, and how often.
 */
import { Agent, request } from 'node:http';
import { backoff, retryAfter } from '../../src/browser/backoff.js';
import { uuid } from '../../src/browser/uuid.js';

/** The attribute (of every bench activity) and the person field that carry an item's id. */
export const ITEM_ATTRIBUTE = 'str:cm:item';
export const IDENTIFY_FIELD = 'str::first';
const MAX_BATCH = 100;
/** How a request that got no answer within 30 s fails (a `/collect` timeout). */
export const NO_ANSWER = 'no answer within 30 s';

export interface Made {
  type: 'track' | 'identify';
  /** ms since the epoch: when it was made (its `ts`) */
  at: number;
  /** the relay's final answer for it, once it has one */
  status?: 'accepted' | 'duplicate' | 'rejected';
}

export interface BrowsersOptions {
  relayUrl: string;
  siteKey: string;
  origin: string;
  /** visitors at once */
  browsers: number;
  /** items per visitor (its identify first) */
  itemsPerVisitor: number;
  activities: readonly string[];
  /** the `user_hash` of an email, as the site's server computes it */
  userHash(email: string): Promise<string>;
  /** the address of visitor `n` (`X-Forwarded-For`) @default one address per visitor */
  address?: (n: number) => string;
  /** the names of visitors' emails, so two sets of browsers in one run never share a person @default `v` */
  prefix?: string;
  /** the header that carries the visitor's address: `x-forwarded-for` (a relay behind a proxy) by default, `cf-connecting-ip` on Workers */
  addressHeader?: string;
}

export interface CollectCall {
  /** performance.now() when it was sent */
  sentAt: number;
  ms: number;
  status: number;
  /** ms since the epoch when the answer came (or the request failed) */
  answeredAt: number;
  /** the browser (visitor number) that sent it */
  browser: number;
  /** its items the answer settled, and told to `retry` */
  settled: number;
  retried: number;
  retryAfter: string | undefined;
  /** how long the browser then waited before sending again, ms (0: it did not wait) */
  waitMs: number;
}

interface Visitor {
  n: number;
  address: string;
  queueId: string;
  email: string;
  hash: string;
  made: number;
  held: Record<string, unknown>[];
  identity?: string;
  inFlight: boolean;
  failures: number;
  pausedUntil: number;
}

export function createBrowsers(options: BrowsersOptions) {
  const made = new Map<string, Made>();
  const calls: CollectCall[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: Math.max(64, options.browsers) });
  const relay = new URL('/collect', options.relayUrl);
  const slots: Visitor[] = [];
  /** visitors who left with items still held: they keep sending until those are settled */
  const leaving = new Set<Visitor>();
  let visitors = 0;
  let rejected = 0;
  /** items answered `retry` (each time), and the Retry-After of the answers that carried one */
  let retried = 0;
  const retryAfters = new Map<string, number>();
  /** requests that failed without an answer, by cause */
  const errors = new Map<string, number>();
  /** backoff timers, cleared on close so a finished bench exits */
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let closed = false;

  const newVisitor = async (): Promise<Visitor> => {
    const n = visitors++;
    const email = `${options.prefix ?? 'v'}${n}-${process.pid}@bench.example.com`;
    const address = options.address?.(n) ?? `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
    return { n, address, queueId: uuid(), email, hash: await options.userHash(email), made: 0, held: [], inFlight: false, failures: 0, pausedUntil: 0 };
  };

  const item = (visitor: Visitor): Record<string, unknown> => {
    const at = Date.now();
    const id = uuid();
    const ts = new Date(at).toISOString();
    const first = visitor.made++ === 0;
    made.set(id, { type: first ? 'identify' : 'track', at });
    if (first) return { id, type: 'identify', ts, fields: { 'str::email': visitor.email, [IDENTIFY_FIELD]: id }, user_hash: visitor.hash };
    return {
      id,
      type: 'track',
      ts,
      activity_id: options.activities[visitor.made % options.activities.length],
      attributes: { [ITEM_ATTRIBUTE]: id },
      person: { 'str::email': visitor.email },
      user_hash: visitor.hash,
    };
  };

  /** One POST; status 0 when it failed without an answer (reset, timeout, an answer cut short). */
  const post = (body: string, address: string) =>
    new Promise<{ status: number; text: string; retryAfter: string | undefined; error?: string }>((resolve) => {
      const headers = {
        'content-type': 'text/plain',
        origin: options.origin,
        [options.addressHeader ?? 'x-forwarded-for']: address,
        'content-length': Buffer.byteLength(body),
      };
      const failed = (error: string) => resolve({ status: 0, text: '', retryAfter: undefined, error });
      const req = request(relay, { method: 'POST', headers, agent }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8'), retryAfter: res.headers['retry-after'] as string | undefined }),
        );
        res.on('error', (error) => failed(error.message));
        // an answer cut short ends with 'close' and no 'end': the request failed (a resolved Promise ignores this)
        res.on('close', () => failed('answer cut short'));
      });
      req.setTimeout(30_000, () => req.destroy(new Error(NO_ANSWER)));
      req.on('error', (error) => failed(error.message));
      req.end(body);
    });

  /** Sends what `visitor` holds (≤ 100 items) unless a request is in flight or it is backing off. */
  const flush = (visitor: Visitor): void => {
    if (closed || visitor.inFlight || visitor.held.length === 0) return;
    // A timer may fire a little before the wall clock says its time came: wait again, never give up.
    if (Date.now() < visitor.pausedUntil) {
      later(visitor);
      return;
    }
    visitor.inFlight = true;
    const batch = visitor.held.slice(0, MAX_BATCH);
    const body = JSON.stringify({ key: options.siteKey, sent_at: new Date().toISOString(), batch, identity: visitor.identity, queue: visitor.queueId });
    const sentAt = performance.now();
    void post(body, visitor.address).then(({ status, text, retryAfter: header, error }) => {
      const ms = performance.now() - sentAt;
      const answeredAt = Date.now();
      if (error) errors.set(error, (errors.get(error) ?? 0) + 1);
      let answer: { results?: { id: string; status: string }[]; identity?: string } = {};
      try {
        answer = JSON.parse(text) as typeof answer;
      } catch {
        // not JSON: a failure like any other, the items stay held
      }
      if (answer.identity) visitor.identity = answer.identity;
      const results =
        status === 400 || status === 413 ? batch.map((b) => ({ id: b['id'] as string, status: 'rejected' })) : status === 200 ? answer.results : undefined;
      const settled = new Set<string>();
      if (header !== undefined) retryAfters.set(header, (retryAfters.get(header) ?? 0) + 1);
      for (const result of results ?? []) {
        const entry = made.get(result.id);
        if (result.status === 'retry') retried++;
        if (!entry || result.status === 'retry') continue;
        entry.status = result.status as NonNullable<Made['status']>;
        if (result.status === 'rejected') rejected++;
        settled.add(result.id);
      }
      visitor.held = visitor.held.filter((h) => !settled.has(h['id'] as string));
      const retry = !results || results.some((r) => r.status === 'retry');
      // As the snippet's scheduler: the relay's Retry-After is the wait; without one, the wait doubles.
      const told = retry ? retryAfter(header, Date.now()) : 0;
      visitor.failures = !retry ? 0 : told ? visitor.failures : visitor.failures + 1;
      visitor.pausedUntil = retry ? Date.now() + (told || backoff(visitor.failures, Math.random)) : 0;
      calls.push({
        sentAt,
        ms,
        status,
        answeredAt,
        browser: visitor.n,
        settled: settled.size,
        retried: (results ?? []).filter((result) => result.status === 'retry').length,
        retryAfter: header,
        waitMs: retry ? visitor.pausedUntil - answeredAt : 0,
      });
      visitor.inFlight = false;
      if (leaving.has(visitor) && visitor.held.length === 0) leaving.delete(visitor);
      if (closed || visitor.held.length === 0) return;
      later(visitor);
    });
  };

  /** Sends what `visitor` holds once its backoff ends. */
  const later = (visitor: Visitor): void => {
    const timer = setTimeout(
      () => {
        timers.delete(timer);
        flush(visitor);
      },
      Math.max(1, visitor.pausedUntil - Date.now()),
    );
    timers.add(timer);
  };

  /** Makes a batch of `size` items in slot `slot` (a new visitor once the current one is done) and sends it. */
  const makeBatch = async (slot: number, size: number) => {
    let visitor = slots[slot];
    if (!visitor || visitor.made >= options.itemsPerVisitor) {
      if (visitor && (visitor.held.length > 0 || visitor.inFlight)) leaving.add(visitor);
      visitor = slots[slot] = await newVisitor();
    }
    const count = Math.min(size, options.itemsPerVisitor - visitor.made);
    for (let i = 0; i < count; i++) visitor.held.push(item(visitor));
    flush(visitor);
  };

  const everyone = () => [...slots.filter(Boolean), ...leaving];

  return {
    made,
    calls,
    /** items made but not yet settled by the relay (held by browsers, or in flight) */
    held: () => everyone().reduce((n, v) => n + v.held.length, 0),
    rejected: () => rejected,
    /** items answered `retry`, counted each time */
    retried: () => retried,
    /** the Retry-After values answered, and how often */
    retryAfters: () => Object.fromEntries(retryAfters),
    errors: () => Object.fromEntries(errors),
    /** the browsers still holding items: what each holds and why it is not sending */
    holding: () =>
      everyone()
        .filter((v) => v.held.length > 0 || v.inFlight)
        .map((v) => ({ held: v.held.length, in_flight: v.inFlight, failures: v.failures, paused_for_ms: Math.max(0, v.pausedUntil - Date.now()) })),
    visitors: () => visitors,
    /**
     * Makes `rate` items a second for `seconds`, in batches of `batch[0]`–`batch[1]` items, each
     * batch from the next slot in turn; `tick` is called every second. What is due goes every
     * `everyMs` (a few requests at once at high rates; 1 spreads them as pages send).
     */
    async offer(rate: number, seconds: number, batch: readonly [number, number], tick: (elapsed: number) => void, everyMs = 5): Promise<void> {
      const started = performance.now();
      const pick = () => batch[0] + Math.floor(Math.random() * (batch[1] - batch[0] + 1));
      let size = pick();
      let count = 0;
      let slot = 0;
      let lastTick = 0;
      for (;;) {
        const elapsed = (performance.now() - started) / 1000;
        if (elapsed >= seconds) break;
        const due = rate * elapsed;
        // a batch goes once all its items are due, so batches of 10 stay batches of 10
        while (count + size <= due) {
          await makeBatch(slot, size);
          slot = (slot + 1) % options.browsers;
          count += size;
          size = pick();
        }
        if (Math.floor(elapsed) > lastTick) {
          lastTick = Math.floor(elapsed);
          tick(lastTick);
        }
        await new Promise((resolve) => setTimeout(resolve, everyMs));
      }
    },
    /** Resolves once every browser holds nothing, or at `deadline` (ms since the epoch); `tick` every second. */
    async drain(deadline: number, done: () => Promise<boolean>, tick: () => void): Promise<boolean> {
      while (Date.now() < deadline) {
        // a browser backing off is woken by its own timer; this only watches
        if (everyone().every((v) => v.held.length === 0 && !v.inFlight) && (await done())) return true;
        tick();
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      return false;
    },
    close() {
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      agent.destroy();
    },
  };
}

export type Browsers = ReturnType<typeof createBrowsers>;
