// What an isolate keeps for all its requests is read by each request for itself: in workerd a call
// (or fetch) belongs to the request that made it, and a request whose client goes away takes its
// unanswered calls with it. A promise of that call shared with other requests never settles, and
// they hang. Here a request is cut off while it reads the suppression list of erasure
// (state/suppression.ts), probes the platform for /readyz (ops/ready.ts) or loads the snippet
// (ingest/snippet.ts), and the next ones must still be answered. (The site's guard:
// refusals-look.test.ts.)
import { abortAllDurableObjects, env, runInDurableObject, SELF } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createSnippetHandler } from '../../src/relay/ingest/snippet.js';
import { createShardedOutbox, SUPPRESSION_OBJECT } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS } from '../../src/relay/workers/state.js';
import { upstreamControl } from '../relay/support/control.js';
import { cutOffFirst, holdObject } from './cut-off.js';
import { drained } from './target.js';

describe('a request cut off by its client holds no other back', () => {
  it("while it reads the isolate's copy of the suppression list", async () => {
    // The isolate's first request: past its looks at the refusal buckets it reads the list, from
    // the object that keeps it, held busy here.
    const list = env['RELAY_OUTBOX'].get(env['RELAY_OUTBOX'].idFromName(SUPPRESSION_OBJECT));
    expect(await cutOffFirst('pk_queue', list)).toEqual({
      first: 'AbortError',
      second: { status: 200, results: ['accepted'] },
      third: { status: 200, results: ['accepted'] },
    });
  });

  it('while it probes the platform for /readyz', async () => {
    const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
    // Nothing else calls the platform meanwhile: the fault below is the probe's.
    await drained(createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS));
    await upstream.reset();
    // The platform takes 1.5 s to answer the first probe; the next ones at once.
    await upstream.faults([{ delayMs: 1_500, status: 200 }]);
    const readyz = (signal?: AbortSignal) => SELF.fetch('https://relay.example.com/readyz', signal ? { signal } : {});
    const cutOff = new AbortController();
    const first = readyz(cutOff.signal).then(
      () => 'answered',
      (error: Error) => error.name,
    );
    await expect.poll(async () => (await upstream.received()).filter((call) => call.method === 'GET').length).toBe(1);
    cutOff.abort();
    expect(await first).toBe('AbortError');
    // The next check, within the 2 s a probe's outcome is kept, is answered (not left waiting on the first one's probe).
    const next = readyz().then(async (response) => ({ status: response.status, body: await response.json() }));
    expect(await Promise.race([next, new Promise((resolve) => setTimeout(() => resolve('no answer'), 10_000))])).toEqual({
      status: 200,
      body: { ready: true },
    });
    // The platform answers the first probe all the same (to nobody): the test ends once it has.
    await expect.poll(async () => (await upstream.received()).filter((call) => call.method === 'GET' && call.answered !== undefined).length).toBe(2);
  });

  it('while it loads the snippet', async () => {
    // On Workers the snippet is a fetch of the static assets, which cannot be held; here its load
    // is a call to an object held busy, made by a first request that runs in another object, and
    // that request ends with its object's reset (as a request ends when its client goes away).
    // The reset below reaches every object: the outbox objects first deliver what they hold.
    await drained(createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS));
    const namespace = env['RELAY_STATE'];
    const slow = () => namespace.get(namespace.idFromName('snippet-source'));
    let loads = 0;
    const handler = createSnippetHandler(async () => {
      loads++;
      await slow().usage();
      return 'console.log("cdp")';
    });
    const { letGo } = holdObject(slow());
    const first = runInDurableObject(namespace.get(namespace.idFromName('snippet-first')), () => handler(new Request('https://relay.example.com/cdp.js')));
    const firstEnded = first.then(
      () => 'answered',
      () => 'ended',
    );
    await expect.poll(() => loads).toBe(1);
    await abortAllDurableObjects();
    expect(await firstEnded).toBe('ended');
    await letGo().catch(() => {});
    const next = handler(new Request('https://relay.example.com/cdp.js')).then(async (response) => ({ status: response.status, text: await response.text() }));
    expect(await Promise.race([next, new Promise((resolve) => setTimeout(() => resolve('no answer'), 10_000))])).toEqual({
      status: 200,
      text: 'console.log("cdp")',
    });
  });
});
