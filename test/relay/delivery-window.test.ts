// Accept, then deliver, against the real emulator over HTTP, on each outbox (memory, an SQLite
// file, a real redis-server): the window (a controllable clock) and the ambiguous-call policy (the
// emulator applies a call, then fails to answer), counted at the emulator: never twice.
import { describe, expect, it } from 'vitest';
import { backing, DAY, emulator, eventsOf, identify, onEachBackend, person, relay, track, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

describe('the window', () =>
  onEachBackend(() => {
    it('answers duplicate for a resend at any age within the window, refuses one beyond it (expired), and delivers the item once', async () => {
      let now = Date.now();
      const clock = { now: () => now, sleep: async () => {} };
      const { post, handlers } = relay({}, { clock });
      const email = `window-${crypto.randomUUID()}@example.com`;
      const item = track(email, new Date(now).toISOString());
      const first = await post([item]);
      expect(first.results).toEqual([{ id: item.id, status: 'accepted' }]);
      expect(first.window).toBe(7 * 24 * 3600);
      const sentAt = now;
      for (const age of [1_000, 3600_000, DAY, 3 * DAY, 6 * DAY, 7 * DAY - 60_000]) {
        now = sentAt + age;
        // The browser's clock agrees with the relay's: sent_at is now.
        const again = await post([item], { sent_at: new Date(now).toISOString() });
        expect([age, again.results[0]!.status]).toEqual([age, 'duplicate']);
      }
      for (const age of [7 * DAY + 60_000, 8 * DAY, 30 * DAY]) {
        now = sentAt + age;
        const late = await post([item], { sent_at: new Date(now).toISOString() });
        expect([age, late.results[0]]).toEqual([age, expect.objectContaining({ id: item.id, status: 'rejected', reason: 'expired' })]);
      }
      await handlers.drained();
      expect(eventsOf(email)).toHaveLength(1);
    });

    it('judges age on the relay clock: a browser clock hours behind is corrected, a future ts is not trusted', async () => {
      const { post, handlers } = relay({ RELAY_DEDUPE_WINDOW_HOURS: '24' });
      const now = Date.now();
      // Made 2 h ago on a browser whose clock runs 30 h behind: its ts looks 32 h old, but it is 2 h old.
      const email = `skew-${crypto.randomUUID()}@example.com`;
      const behind = track(email, new Date(now - 32 * 3600_000).toISOString());
      const answer = await post([behind], { sent_at: new Date(now - 30 * 3600_000).toISOString() });
      expect(answer.window).toBe(24 * 3600);
      expect(answer.results[0]!.status).toBe('accepted');
      // Really older than the window: refused.
      const old = track(email, new Date(now - 25 * 3600_000).toISOString());
      expect((await post([old], { sent_at: new Date(now).toISOString() })).results[0]).toMatchObject({ status: 'rejected', reason: 'expired' });
      await handlers.drained();
      expect(eventsOf(email)).toHaveLength(1);
    });
  }));

describe('ambiguous calls', () =>
  onEachBackend(() => {
    const faults = [
      ['applied, then 504', { status: 504, applied: true }],
      ['applied, then the connection dropped', { drop: 'close', applied: true }],
      ['applied, then no answer (timeout)', { drop: 'hang', applied: true }],
    ] as const;
    it.each(faults)('%s: activities are held as dead letters (ambiguous), counted, never sent twice', async (_name, fault) => {
      // A call is cut off after 500 ms (the budget); an ambiguous merge would go again after 200 ms.
      const { post, handlers, events } = relay({ RELAY_BUDGET_MS: '500', RELAY_DELIVERY_RETRY_MS: '200' });
      const email = `amb-${crypto.randomUUID()}@example.com`;
      emulator.emulator.setFaults({ 'activities/create': { ...fault } });
      const item = track(email);
      expect((await post([item])).results[0]!.status).toBe('accepted');
      await handlers.drained();
      emulator.emulator.setFaults({});
      // The platform applied it once; the relay holds it instead of guessing.
      expect(eventsOf(email)).toHaveLength(1);
      const letters = await handlers.outbox!.deadLetters();
      expect(letters.filter((letter) => letter.id === item.id).map((letter) => letter.reason)).toEqual(['ambiguous']);
      expect(events.flatMap((event) => event.ambiguous.map((entry) => entry.id))).toContain(item.id);
      // Time passes, the relay keeps running: nothing is sent again.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await handlers.drained();
      expect(eventsOf(email)).toHaveLength(1);
    });

    it('RELAY_AMBIGUOUS=resend opts into at least once: the activity goes again', async () => {
      const { post, handlers } = relay({ RELAY_AMBIGUOUS: 'resend', RELAY_DELIVERY_RETRY_MS: '200' });
      const email = `resend-${crypto.randomUUID()}@example.com`;
      const unanswered = () => emulator.emulator.calls()['activities/create']?.statuses?.['504'] ?? 0;
      const before = unanswered();
      emulator.emulator.setFaults({ 'activities/create': { status: 504, applied: true, rate: 1 } });
      expect((await post([track(email)])).results[0]!.status).toBe('accepted');
      await expect.poll(() => eventsOf(email).length, { timeout: 5_000 }).toBeGreaterThanOrEqual(1);
      emulator.emulator.setFaults({});
      await handlers.drained();
      // Each call applied but answered 504 went again, until one was answered: a loaded machine may
      // see it go more than twice before the fault is lifted, so count its 504s, not a fixed two.
      const ambiguous = unanswered() - before;
      expect(ambiguous).toBeGreaterThanOrEqual(1);
      expect(eventsOf(email)).toHaveLength(ambiguous + 1);
      expect(await handlers.outbox!.deadLetters()).toEqual([]);
    });

    it('sends a merge again after an ambiguous answer: merging the same fields twice leaves the person as once', async () => {
      const { post, handlers } = relay({ RELAY_DELIVERY_RETRY_MS: '200' });
      const email = `merge-${crypto.randomUUID()}@example.com`;
      emulator.emulator.setFaults({ 'person/merge': { status: 504, applied: true } });
      expect((await post([identify(email, 'Mia')])).results[0]!.status).toBe('accepted');
      await expect.poll(() => emulator.emulator.calls()['person/merge']?.statuses?.['504'] ?? 0, { timeout: 5_000 }).toBeGreaterThan(0);
      emulator.emulator.setFaults({});
      await handlers.drained();
      expect(person(email)).toHaveLength(1);
      expect(person(email)[0]!.fields['str::first']).toBe('Mia');
      expect(await handlers.outbox!.deadLetters()).toEqual([]);
    });

    it('an entry leased again after its deliverer died mid-call (attempts > 0) is held, not sent', async () => {
      const outbox = backing!.outbox;
      const { post, handlers } = relay({}, { deliver: false });
      const item = track(`orphan-${crypto.randomUUID()}@example.com`);
      expect((await post([item])).results[0]!.status).toBe('accepted');
      // A deliverer that leased it, started a call with it and died before it heard the answer.
      const [leased] = await outbox.lease('dead-deliverer', 10, Date.now() - 60_000, 1_000);
      expect(await outbox.sending('dead-deliverer', [leased!.seq], Date.now() - 60_000)).toEqual([leased!.seq]);
      const { handlers: next } = relay();
      await next.drained();
      expect((await outbox.deadLetters()).map((letter) => [letter.id, letter.reason])).toEqual([[item.id, 'ambiguous']]);
      expect(eventsOf(item.person['str::email'])).toHaveLength(0);
      await handlers.close();
    });
  }));
