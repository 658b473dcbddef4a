// The SQLite file takes a call's pacer steps and its `sending` mark in one transaction
// (Pacer.stepsWith). When that transaction fails (SQLITE_BUSY, a full disk), nothing of it was
// written: the call takes its slot apart if it had not, asks its place and its mark apart from then
// on, and still goes within the key's budget. Every event arrives once, nothing is left in doubt, and the failure is logged
// with its cause. The real deliverer on a real SQLite file, the emulator over HTTP.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { LogLine } from '../../src/relay/core/logging.js';
import type { CallStepAsk, Outbox, Pacer } from '../../src/relay/state/outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { closing, eventsOf, relay, track, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

/**
 * `pacer`, whose one step with `outbox` fails before it writes the first `failing` times it is
 * asked; `slots` counts the deliver slots it granted, in a step or apart.
 */
function failingSteps(pacer: Pacer, failing: number): { pacer: Pacer; asks: CallStepAsk[]; slots: () => number } {
  const asks: CallStepAsk[] = [];
  let slots = 0;
  return {
    asks,
    slots: () => slots,
    pacer: {
      ...pacer,
      async take(...args: Parameters<Pacer['take']>) {
        const wait = await pacer.take(...args);
        if (wait === 0 && args[1] === 'deliver') slots++;
        return wait;
      },
      stepsWith(outbox: Outbox) {
        const step = pacer.stepsWith?.(outbox);
        if (step === undefined) return undefined;
        return async (ask) => {
          asks.push(ask);
          if (asks.length <= failing) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
          const answer = await step(ask);
          if (answer.taken) slots++;
          return answer;
        };
      },
    },
  };
}

it('a failed combined step (slot, place and mark) is asked apart: the call still goes, each event once, the cause logged', async () => {
  const store = await createSqliteOutbox(join(mkdtempSync(join(tmpdir(), 'cdp-step-blips-')), 'relay-state.db'));
  closing.push(() => store.close());
  // Two failures: the first call's step with its slot still to take, then a later call's.
  const { pacer, asks, slots } = failingSteps(store.pacer(10), 2);
  const lines: LogLine[] = [];
  const { post, handlers, events } = relay({ RELAY_LOG: 'info', RELAY_AMBIGUOUS: 'hold' }, { outbox: store.outbox, pacer, logger: (line) => lines.push(line) });
  const emails = Array.from({ length: 250 }, (_, n) => `step-${n}-${crypto.randomUUID()}@example.com`);
  for (let start = 0; start < emails.length; start += 50) {
    const results = (await post(emails.slice(start, start + 50).map((email) => track(email)))).results;
    expect(results.every((result) => result.status === 'accepted')).toBe(true);
  }
  await handlers.drained({ timeoutMs: 20_000 });
  // The combined step was there to fail, and its first failure had a slot still to take.
  expect(asks.length).toBeGreaterThanOrEqual(2);
  expect(asks[0]!.take).toBe(true);
  const unreachable = lines.filter((line) => line.error === 'pacer_unreachable');
  expect(unreachable.length).toBeGreaterThanOrEqual(2);
  expect(String(unreachable[0]!['cause'])).toContain('database is locked');
  // Every call that went had its slot of the key's budget: the one the failed step did not take was taken apart.
  expect(slots()).toBeGreaterThanOrEqual(events.filter((event) => event.called).length);
  expect(await store.outbox.deadLetters()).toEqual([]);
  expect((await store.outbox.stats()).pending).toBe(0);
  expect(emails.map((email) => eventsOf(email).length)).toEqual(emails.map(() => 1));
}, 40_000);
