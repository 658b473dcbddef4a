/**
 * What a late arrival is told by: where the events are held. Read once the wait for them is
 * over, in the order that misses nothing (each page's IndexedDB before the relay's outbox):
 * - each page: its path, whether it runs the snippet, the events its IndexedDB still holds, the
 *   Web Locks held or waited for on its origin, and what a flush asked now does (settles, fails,
 *   or does not settle in 5 s: a flush stuck behind a lock or a transaction);
 * - the relay: what it answered in this file, what its outbox still holds (waiting, dead letters
 *   and why), and its deliverer's calls that did not simply succeed (ambiguous, dead);
 * - the platform: what it holds for the person before and after those flushes.
 * An event stored and never sent, sent and held by the relay, or delivered late each reads apart.
 */
import type { Stack } from '../snippet-stack.js';
import type { EnginePage } from './index.js';

/** In a page: what it holds and does now, as one line (sent as source text: nothing from outside). */
const pageState = async (): Promise<string> => {
  const within = <T>(ms: number, work: Promise<T>) =>
    Promise.race([work, new Promise<string>((resolve) => setTimeout(() => resolve(`no answer in ${ms / 1000} s`), ms))]);
  const cdp = (window as unknown as { cdp?: { loaded?: boolean; flush?: () => Promise<void> } }).cdp;
  const snippet = !!cdp?.loaded;
  // Opened only when it exists: an open of a missing database would create it without the snippet's store.
  const exists = (await indexedDB.databases?.())?.some((db) => db.name === 'cdp-edge') ?? true;
  const stored = !exists
    ? 'no database'
    : await within(
        3_000,
        new Promise<string>((resolve) => {
          const open = indexedDB.open('cdp-edge');
          open.onerror = () => resolve(`not opened (${open.error})`);
          open.onsuccess = () => {
            const db = open.result;
            if (!db.objectStoreNames.contains('queue')) return resolve('no queue');
            const rows = db.transaction('queue', 'readonly').objectStore('queue').getAll();
            rows.onerror = () => resolve(`not read (${rows.error})`);
            rows.onsuccess = () => {
              db.close();
              const entries = (rows.result as unknown[]).flatMap((row) =>
                Array.isArray(row) ? (row as { item: { type: string; attributes?: Record<string, string> } }[]) : [],
              );
              resolve(`[${entries.map(({ item }) => item.attributes?.['str:cm:n'] ?? item.type).join(', ')}]`);
            };
          };
        }),
      );
  const locks = navigator.locks
    ? await within(
        3_000,
        navigator.locks.query().then(({ held = [], pending = [] }) => `${held.length} held, ${pending.length} waiting`),
      )
    : 'none (no Web Locks)';
  const flushed =
    snippet && cdp?.flush
      ? await within(
          5_000,
          cdp.flush().then(
            () => 'settled',
            (error: unknown) => `failed (${String(error)})`,
          ),
        )
      : 'none (no snippet)';
  return `${location.pathname} ${snippet ? 'with' : 'without'} the snippet, its IndexedDB holding ${stored}, Web Locks ${locks}; a flush asked now: ${flushed}`;
};

/** Why `expected` events of `email` are not all at the platform: one message naming where each part of the trail stands. */
export async function lateArrival(stack: Stack, pages: readonly EnginePage[], email: string, expected: number): Promise<string> {
  const before = stack.received(email);
  const shown = await Promise.all(
    pages.map((page) => page.evaluate(pageState, undefined).catch((cause: unknown) => `a page not read (${String(cause).slice(0, 80)})`)),
  );
  // What those flushes sent reaches the platform once the relay's outbox has drained (or not in 5 s).
  const drained = await stack.relay.drained({ timeoutMs: 5_000 }).then(
    () => '',
    (cause: unknown) => ` (${String(cause)})`,
  );
  const counts = new Map<string, number>();
  for (const { result } of stack.answers()) counts.set(result, (counts.get(result) ?? 0) + 1);
  const answered = [...counts].map(([result, count]) => `${count} ${result}`).join(', ') || 'nothing';
  const outbox = await Promise.all([stack.relay.outbox.stats(), stack.relay.outbox.deadLetters()]).then(
    ([{ pending, dead }, letters]) =>
      `${pending} waiting, ${dead} dead letters${letters.length ? ` (${[...new Set(letters.map((l) => l.reason))].join('; ')})` : ''}`,
    (cause: unknown) => `not read (${String(cause)})`,
  );
  const calls = (stack.relayLog as { kind?: string; status?: number; ambiguous?: number; dead?: number }[]).filter(
    (line) => line.kind === 'deliver' && (line.status !== 200 || line.ambiguous || line.dead),
  );
  return (
    `${expected} events of ${email} did not reach the platform within 30 s: it held [${before.join(', ')}]` +
    `, and [${stack.received(email).join(', ')}] after the flushes below${drained}; the relay answered ${answered} in this file` +
    `; its outbox holds ${outbox}; ${calls.length} delivery calls did not simply succeed${calls.length ? ` (${JSON.stringify(calls.slice(-3))})` : ''}` +
    `; pages: ${shown.join('; ')}`
  );
}
