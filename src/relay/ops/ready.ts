/**
 * Readiness (`GET /readyz`): the relay is ready when its store answers and the platform answered
 * lately. Any answer counts, a 4xx or a 429 included: it proves the way there works. When the last
 * answer is older than `freshMs`, or a call failed since, a probe (a GET of the platform's base
 * address, without the key) decides, and its outcome is kept briefly. A check never waits on
 * another check's probe: while one is under way the others take the last outcome, or probe
 * themselves when there is none. On Workers a fetch belongs to the request that made it, and one
 * whose client goes away takes its fetch with it: a shared promise of it would never settle, and
 * every check of the isolate would wait on it (test/workerd/cut-off.test.ts).
 *
 * The public port answers only ready or not ready ({@link publicState}): a reason names internal
 * addresses and error text. The reason goes to the private metrics port's `/readyz` and, each time
 * it changes, to the log.
 * @module
 */
import type { RelayObserver } from '../core/observe.js';
import type { RelayStore } from '../state/store.js';
import { discard, type Transport } from '../deliver/transport.js';
import { createLastValues } from '../core/last-value.js';

export interface ReadyState {
  ready: boolean;
  /** what is not ready, e.g. `store: connection refused`; absent when ready */
  reason?: string;
}

export interface Readiness {
  check(): Promise<ReadyState>;
  /** feeds the platform's answers (and failures) in */
  observer: RelayObserver;
}

/** What the public port may say: ready or not, nothing about why. */
export const publicState = (state: ReadyState): ReadyState => ({ ready: state.ready });

export interface ReadinessOptions {
  /** told once each time readiness changes (a new reason, or ready again), for the log */
  onChange?: ((state: ReadyState) => void) | undefined;
  store: Pick<RelayStore, 'ping'>;
  transport: Transport;
  baseUrl: string;
  now: () => number;
  /** how old the last platform answer may be @default 60 000 ms */
  freshMs?: number;
  /** how long a check waits for the store or a probe @default 2 000 ms */
  timeoutMs?: number;
}

const PROBE_CACHE_MS = 2_000;

export function createReadiness(options: ReadinessOptions): Readiness {
  const { store, transport, baseUrl, now } = options;
  const freshMs = options.freshMs ?? 60_000;
  const timeoutMs = options.timeoutMs ?? 2_000;
  let answeredAt = Number.NEGATIVE_INFINITY;
  let failedAt = Number.NEGATIVE_INFINITY;
  /** the last probe's outcome (a plain value: any request may read it), standing in while another probe is under way (it ends within `timeoutMs`, or with its request) */
  const probed = createLastValues<string | undefined>({ freshMs: PROBE_CACHE_MS, underWayMs: timeoutMs, maxKeys: 1 });
  let lastReason: string | undefined;

  const within = <T>(work: Promise<T>, what: string): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${timeoutMs} ms`)), timeoutMs);
    });
    return Promise.race([work, late]).finally(() => clearTimeout(timer));
  };
  const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

  const probePlatform = async (): Promise<string | undefined> => {
    try {
      const answer = await transport({ method: 'GET', url: `${baseUrl}/`, headers: { accept: 'application/json' }, body: undefined, timeoutMs });
      await discard(answer);
      answeredAt = now();
      return undefined;
    } catch (error) {
      failedAt = now();
      return `platform: ${reasonOf(error)}`;
    }
  };

  const platformProblem = async (): Promise<string | undefined> => {
    const at = now();
    if (answeredAt > failedAt && at - answeredAt <= freshMs) return undefined;
    return (await probed.get('', at, probePlatform)).value;
  };

  return {
    async check() {
      const [storeProblem, platform] = await Promise.all([
        within(store.ping(), 'the store').then(
          () => undefined,
          (error: unknown) => `store: ${reasonOf(error)}`,
        ),
        platformProblem(),
      ]);
      const reason = storeProblem ?? platform;
      const state: ReadyState = reason === undefined ? { ready: true } : { ready: false, reason };
      if (reason !== lastReason) {
        lastReason = reason;
        options.onChange?.(state);
      }
      return state;
    },
    observer: {
      upstream: ({ status }) => {
        if (status === 0 || status >= 500) failedAt = now();
        else answeredAt = now();
      },
    },
  };
}
