/**
 * `createEmulator`: the platform API as a runtime-neutral `fetch` handler (Node, workerd,
 * Deno, Bun). State lives in memory; `src/emulator/node.ts` adds a server and a data file.
 *
 * @example
 * const emulator = createEmulator({ key: 'dev-key' });
 * const response = await emulator.fetch(new Request('http://emulator/v1/tags/get', {
 *   method: 'POST', headers: { 'X-Api-Key': 'dev-key', 'Content-Type': 'application/json' }, body: '{}' }));
 * @module
 */
import { createApp } from './app.js';
import { createCallLog, type CallCounts } from './calls.js';
import { createRateLimiter } from './rate-limit.js';
import { resolveOptions, type EmulatorOptions, type Faults, type ResolvedOptions } from './options.js';
import { loadSnapshot, toSnapshot, type EmulatorSnapshot } from './snapshot.js';
import { Store } from './store.js';

export interface Emulator {
  /** answers one request (the Hono app's fetch); `env` is what the server passes beside it (Node's socket for `drop` faults) */
  fetch(request: Request, env?: unknown): Promise<Response>;
  /** the live state (read it in tests; write through the API) */
  readonly state: Store;
  /** the options after defaults */
  readonly options: ResolvedOptions;
  /** the state as JSON (what a data file holds) */
  snapshot(): EmulatorSnapshot;
  /** the /v1 calls so far per endpoint: answers by status, entries applied */
  calls(): CallCounts;
  /** back to the seed (or empty), the count of calls cleared */
  reset(): void;
  /** replaces the fault table */
  setFaults(faults: Faults): void;
  /** how many times the bad-request ban shut the key out (with `rateLimit` on) */
  bans(): number;
}

/** Creates an emulator; throws `TypeError`/`RangeError` naming a bad option. */
export function createEmulator(options: EmulatorOptions = {}): Emulator {
  const resolved = resolveOptions(options);
  const store = new Store(resolved.now, () => resolved.onChange());
  const calls = createCallLog();
  const reset = () => {
    calls.clear();
    if (options.seed) loadSnapshot(store, options.seed);
    else store.clear();
  };
  if (options.seed) loadSnapshot(store, options.seed);
  const limiter = createRateLimiter(resolved.rateLimit, resolved.now);
  const app = createApp({ store, options: resolved }, { reset, calls, limiter });
  return {
    fetch: async (request, env) => app.fetch(request, env),
    state: store,
    options: resolved,
    snapshot: () => toSnapshot(store),
    calls: () => calls.counts(),
    reset,
    setFaults(faults) {
      resolved.faults = resolveOptions({ faults }).faults;
    },
    bans: () => limiter.bans,
  };
}
