// Each isolate reads the suppression list from the deployment's `suppressions` object at most once
// per refresh (state/suppression.ts, 2 s), however many /collect it answers meanwhile, and those
// reads are counted among the object's calls (RelayOutbox.usage), as every other Durable Object
// request is.
import { createExecutionContext, env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { SUPPRESSION_REFRESH_MS } from '../../src/relay/state/suppression.js';
import { SUPPRESSION_OBJECT } from '../../src/relay/workers/outbox.js';
import { ORIGIN, siteKey, sites, track } from '../relay/suite/target.js';

const site = siteKey('reads');
// One env object for every request: one isolate's relay (build.ts keeps it per env).
const isolateEnv = { ...env, RELAY_SITES: sites({ key: site, origins: [ORIGIN], verify: 'off' }) };

async function post(): Promise<number> {
  const request = new Request('https://relay.example.com/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': '198.51.100.9' },
    body: JSON.stringify({ key: site, batch: [track('act:cm:viewed', { 'str::email': 'reader@example.com' })] }),
  });
  const response = await worker.fetch(request, isolateEnv as never, createExecutionContext());
  await response.arrayBuffer();
  return response.status;
}

/** Calls the `suppressions` object has served. */
async function reads(): Promise<number> {
  const namespace = env['RELAY_OUTBOX'];
  return (await namespace.get(namespace.idFromName(SUPPRESSION_OBJECT)).usage()).calls;
}

describe("an isolate's reads of the suppression list", () => {
  it('are counted among the calls of the object that keeps it: one for five requests within a refresh, one more after it', async () => {
    const before = await reads();
    const started = Date.now();
    for (let i = 0; i < 5; i++) expect(await post()).toBe(200);
    // One read, and one more per refresh should a slow machine take longer than that for the five.
    const read = (await reads()) - before;
    expect(read).toBeGreaterThanOrEqual(1);
    expect(read).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / SUPPRESSION_REFRESH_MS));
    await new Promise((resolve) => setTimeout(resolve, SUPPRESSION_REFRESH_MS + 100));
    const later = await reads();
    expect(await post()).toBe(200);
    expect(await reads()).toBe(later + 1);
  }, 30_000);
});
