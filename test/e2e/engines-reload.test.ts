/**
 * The cross-engine spec's scenarios that span page loads, in Chromium, Firefox ESR and WebKitGTK:
 * anonymous events held on one page and identified on the next, and two site keys sharing an
 * origin. Counted at the emulator and in the relay's per-item answers. The relay down across a
 * reload is in engines-outage.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { availableEngines } from './engines/index.js';
import { type PageGlobals, problems, range, send, snippetLoaded, useEngine, useStack } from './engines/harness.js';
import { ACTIVITY, VERIFIED_SITE_KEY } from './snippet-stack.js';

declare const window: PageGlobals;

const engines = availableEngines('three-engine end-to-end across page loads (test/e2e/engines-reload.test.ts)');
const stack = useStack();

describe.each(engines)('the snippet across page loads in %s', (name) => {
  const { open, newPerson, arrivesExactlyOnce } = useEngine(name, stack);

  it.each([
    ['ESM (createTracker(); await identify())', true, (method: string, args: string) => `${method === 'identify' ? 'await ' : ''}cdp.${method}(${args})`],
    ["script tag (cdp('identify', …) right after init)", false, (method: string, args: string) => `cdp('${method}',${args})`],
  ])('identify at load, %s: the anonymous events held from earlier pages all arrive once', async (_, esm, call) => {
    // A relay that verifies identity: a track sent for a person without the identify that proves it is rejected.
    const init = { key: VERIFIED_SITE_KEY, flushInterval: 1000 };
    // An anonymous visitor's events are held in the browser (nobody to send them for yet)…
    const page = await open(init, { esm });
    await send(page, undefined, 0, 8);
    // …until a later page identifies them as it loads, with the default flush interval, as the README shows.
    const email = newPerson();
    const identify = call('identify', `{'str::email':'${email}'},{user_hash:'${await stack().userHash(email)}'}`);
    await page.goto(stack().pageUrl(init, { esm, script: `${call('track', `'${ACTIVITY}',{'str:cm:n':'8'}`)};${identify}` }));
    expect(await snippetLoaded(page)).toBe(true);
    await arrivesExactlyOnce(email, range(0, 9));
    expect(await problems(page)).toEqual([]);
  });

  it('two site keys on one origin: each tracker sends only its own items, under its own key, once', async () => {
    // A migration, or two apps on one origin: the second tracker has a key (and a relay site) of its own.
    const second = { relay: stack().relay.url, key: VERIFIED_SITE_KEY, flushInterval: 100 };
    const flags = { esm: true, script: `window.second=createTracker(${JSON.stringify(second)});` };
    const page = await open({}, flags);
    const [ann, bob] = [newPerson(), newPerson()];
    const answered = stack().answers().length;
    const track = (from: number, to: 'cdp' | 'second', identify?: { email: string; userHash?: string }) =>
      page.evaluate(
        async ({ from, to, identify, activity }) => {
          const tracker = window[to];
          if (identify) await tracker.identify({ 'str::email': identify.email }, identify.userHash ? { user_hash: identify.userHash } : {});
          await Promise.all(Array.from({ length: 5 }, (_, i) => tracker.track(activity, { 'str:cm:n': String(from + i) })));
        },
        { from, to, identify, activity: ACTIVITY },
      );
    // Each tracker holds anonymous events; on the next page each names its own person.
    await Promise.all([track(0, 'cdp'), track(100, 'second')]);
    await page.goto(stack().pageUrl({ flushInterval: 100 }, flags));
    expect(await snippetLoaded(page)).toBe(true);
    await Promise.all([track(5, 'cdp', { email: ann }), track(105, 'second', { email: bob, userHash: await stack().userHash(bob) })]);
    await arrivesExactlyOnce(ann, range(0, 10));
    await arrivesExactlyOnce(bob, range(100, 10));
    const answers = stack().answers().slice(answered);
    // Sent by the other tracker, an item goes under the wrong site (unverified there) and twice.
    expect(answers.filter((a) => a.result === 'rejected' || a.result === 'duplicate')).toEqual([]);
    const accepted = answers.filter((a) => a.result === 'accepted').map((a) => a.id);
    expect(accepted.length).toBe(22);
    expect(new Set(accepted).size).toBe(22);
    expect(await problems(page)).toEqual([]);
  });
});
