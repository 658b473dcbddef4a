/**
 * A deliver call's steps at its turn to leave (outbox-suite.ts runs these on every store: memory,
 * SQLite, Redis, Durable Objects): its slot, its place in the shared window and the `sending` mark
 * of its entries. Where the pacer shares the outbox's transactions (`Pacer.stepsWith`: the SQLite
 * file) they are one step; elsewhere they are asked apart, as the deliverer does. Either way what
 * one of them refused takes nothing, nor anything after it, and what was granted is kept.
 */
import { expect, it } from 'vitest';
import type { CallStepAnswer, CallStepAsk, Outbox, OutboxItem, Pacer } from '../../../src/relay/state/outbox.js';

type Connection = { outbox: Outbox; pacer(rate: number, catchUpMs?: number): Pacer };
type Handle = Connection & { another(): Promise<Connection & { close(): Promise<void> }> };
type WithStore = (run: (handle: Handle) => Promise<void>) => () => Promise<void>;
type Item = (site: string, id: string, overrides?: Partial<OutboxItem>) => OutboxItem;

const WINDOW = 7 * 24 * 3600_000;

/** The call's steps: the pacer's one step where it has it for `outbox`, else each apart. */
async function callStep(pacer: Pacer, outbox: Outbox, ask: CallStepAsk): Promise<CallStepAnswer> {
  const step = pacer.stepsWith?.(outbox);
  if (step !== undefined) return step(ask);
  if (ask.take) {
    const wait = await pacer.take(ask.now, 'deliver');
    if (wait !== 0) return { taken: false, wait };
  }
  const shared = await pacer.leave!(ask.now, ask.inMs, ask.again);
  if (shared > 0) return { taken: ask.take, wait: ask.inMs + shared };
  if (ask.sending === undefined) return { taken: ask.take, wait: 0 };
  return { taken: ask.take, wait: 0, marked: await outbox.sending(ask.sending.owner, ask.sending.seqs, ask.now) };
}

export function pacerStepCases(withStore: WithStore, item: Item): void {
  it(
    "takes a deliver call's slot, its place and its mark in order: nothing past a refusal, each entry marked once",
    withStore(async ({ outbox, pacer, another }) => {
      const site = `step-${crypto.randomUUID().slice(0, 8)}`;
      const now = Date.now() + 10_000;
      await outbox.accept(
        ['a', 'b', 'c'].map((id) => item(site, id)),
        now,
        WINDOW,
      );
      const [a, b] = (await outbox.lease('me', 3, now, 60_000)).map((entry) => entry.seq) as [number, number];
      const deliver = pacer(10);
      const go = (ask: CallStepAsk) => callStep(deliver, outbox, ask);
      // Granted: counted, and marked.
      expect(await go({ now, take: true, inMs: 0, again: false, sending: { owner: 'me', seqs: [a] } })).toEqual({ taken: true, wait: 0, marked: [a] });
      // The next slot is 100 ms on: refused, so neither counted nor marked.
      expect(await go({ now: now + 1, take: true, inMs: 0, again: false, sending: { owner: 'me', seqs: [b] } })).toEqual({ taken: false, wait: 99 });
      // Granted and counted; the entry is not that lease's: not marked.
      expect(await go({ now: now + 100, take: true, inMs: 0, again: false, sending: { owner: 'another', seqs: [b] } })).toEqual({
        taken: true,
        wait: 0,
        marked: [],
      });
      // Its slot and its place 300 ms ahead, nothing to mark yet.
      expect(await go({ now: now + 200, take: true, inMs: 300, again: false })).toEqual({ taken: true, wait: 0 });
      // Three counted in the window (now, +100, +500): seven more fit in it, not eight.
      for (let i = 0; i < 7; i++) expect(await deliver.leave!(now + 501 + i, 0)).toBe(0);
      expect(await deliver.leave!(now + 510, 0)).toBeGreaterThan(0);
      // Once their lease has run out, each entry comes back with the sends started on it: `a` one, `b` none.
      const back = await outbox.lease('later', 3, now + 61_000, 60_000);
      expect(back.map((entry) => [entry.id, entry.attempts])).toEqual([
        ['a', 1],
        ['b', 0],
        ['c', 0],
      ]);
      // The one step marks only its own connection's outbox.
      const other = await another();
      try {
        if (deliver.stepsWith !== undefined) expect(deliver.stepsWith(other.outbox)).toBeUndefined();
      } finally {
        await other.close();
      }
    }),
  );
}
