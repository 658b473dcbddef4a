// A request refused by one of its limits spends nothing of the others on Workers too
// (test/relay/support/fair-limits.ts): visitors' buckets in the isolate (no binding), and in the
// Rate Limiting binding, 3 per 10 s per visitor as the sites' own allowance, with the sites' caps
// in the isolate. Node's stores: test/relay/limits-fair.test.ts.
import { createExecutionContext, env } from 'cloudflare:test';
import { describe } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { FAIR_SITES, type FairPost, fairCases, withinOneWindow } from '../relay/support/fair-limits.js';
import { ORIGIN, track } from '../relay/suite/target.js';

/** Posts through the entry with `vars`: one object for every request, so one isolate's relay (build.ts keeps it per env). */
function poster(vars: Record<string, unknown>): FairPost {
  const isolateEnv = { ...env, RELAY_SITES: JSON.stringify(FAIR_SITES.map((site) => ({ ...site, origins: [ORIGIN], verify: 'off' }))), ...vars };
  return async (site, ip) => {
    const request = new Request('https://relay.example.com/collect', {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': ip },
      body: JSON.stringify({ key: site, batch: [track('act:cm:viewed', { 'str::email': `${ip}@example.com` })] }),
    });
    const response = await worker.fetch(request, isolateEnv as never, createExecutionContext());
    const body = (await response.json()) as { error?: { code: string } };
    return { status: response.status, code: body.error?.code, retryAfter: response.headers.get('retry-after') };
  };
}

describe("limits that refuse a request, visitors' buckets in the isolate", () => {
  fairCases(poster({}), (n) => `198.18.1.${n}`);
});

describe('limits that refuse a request, visitors in the Rate Limiting binding', () => {
  // The binding counts in 10 s windows of the wall clock: a case's four requests within one (at load 10
  // a fresh-clone CI run met a boundary between the third and the fourth, which was then served).
  fairCases(
    poster({ RELAY_RATE_LIMIT: env['TEST_RATE_LIMIT'] }),
    (n) => `198.18.2.${n}`,
    () => withinOneWindow(10_000, 5_000),
  );
});
