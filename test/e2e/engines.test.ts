/**
 * One spec, three engines: the snippet's promises (0 lost, 0 duplicated) in Chromium, Firefox
 * ESR and WebKitGTK, against the real relay and emulator, counted at the emulator (and, where a
 * second send is the failure, in the relay's per-item answers). Each test gets a fresh profile.
 * engines-reload.test.ts has the scenarios that span page loads.
 */
import { describe, expect, it } from 'vitest';
import { availableEngines } from './engines/index.js';
import { type PageGlobals, problems, range, send, sleep, useEngine, useStack } from './engines/harness.js';
import { ACTIVITY, VERIFIED_SITE_KEY } from './snippet-stack.js';

declare const window: PageGlobals;

const engines = availableEngines('three-engine end-to-end (test/e2e/engines.test.ts)');
const stack = useStack();

describe.each(engines)('the snippet in %s', (name) => {
  const { open, newPerson, arrivesExactlyOnce } = useEngine(name, stack);

  it('consent store-only, then identify and granted: what was held and what follows arrives once', async () => {
    // The demo's order on a relay that verifies identity: browse, sign up (identify with its proof), accept.
    const page = await open({ key: VERIFIED_SITE_KEY, consent: 'store-only' });
    const email = newPerson();
    await send(page, undefined, 0, 5);
    await send(page, { email, userHash: await stack().userHash(email) }, 5, 5);
    // Even a flush sends nothing while pending: once it ran and the relay is idle, nothing arrived.
    await stack().settled([page]);
    expect(stack().received(email)).toEqual([]);
    await page.evaluate(() => window.cdp.consent('granted'), undefined);
    await send(page, undefined, 10, 5);
    await arrivesExactlyOnce(email, range(0, 15));
    expect(await problems(page)).toEqual([]);
  });

  it('flush() while an automatic flush runs: no item is sent twice', async () => {
    const page = await open({ flushInterval: 15 });
    const email = newPerson();
    const answered = stack().answers().length;
    await send(page, email, 0, 0);
    // 48 events: the emulator keeps 50 a day per activity and person.
    const ROUNDS = 16;
    const PER_ROUND = 3;
    await page.evaluate(
      async ({ rounds, perRound, activity }) => {
        for (let round = 0; round < rounds; round++) {
          const stored = Array.from({ length: perRound }, (_, i) => window.cdp.track(activity, { 'str:cm:n': String(round * perRound + i) }));
          // Each round meets the automatic flush at another phase.
          await new Promise((r) => setTimeout(r, (round * 7) % 25));
          await Promise.all([...stored, window.cdp.flush()]);
        }
        await window.cdp.flush();
      },
      { rounds: ROUNDS, perRound: PER_ROUND, activity: ACTIVITY },
    );
    await arrivesExactlyOnce(email, range(0, ROUNDS * PER_ROUND));
    const answers = stack().answers().slice(answered);
    // Every item (the identify too) accepted once, and never answered as a duplicate of one sent
    // before (a `retry` answer, when the platform was slow, is a resend the relay asked for).
    expect(answers.filter((a) => a.result === 'duplicate')).toEqual([]);
    const accepted = answers.filter((a) => a.result === 'accepted').map((a) => a.id);
    expect(accepted.length).toBe(ROUNDS * PER_ROUND + 1);
    expect(new Set(accepted).size).toBe(accepted.length);
    expect(await problems(page)).toEqual([]);
  });

  it('events tracked right before navigating away arrive (the exit beacon)', async () => {
    const page = await open({ flushInterval: 3_600_000 });
    // The start-up flush has gone: from here only the beacon sends.
    await page.evaluate(() => window.cdp.flush(), undefined);
    const email = newPerson();
    await send(page, email, 0, 12);
    await sleep(300);
    expect(stack().received(email)).toEqual([]);
    expect(await problems(page)).toEqual([]);
    await page.goto(`${stack().site}/away`);
    await arrivesExactlyOnce(email, range(0, 12));
  });
});
