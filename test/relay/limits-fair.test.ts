// A request refused by one of its limits spends nothing of the others (support/fair-limits.ts),
// over real HTTP on each Node state that keeps the buckets: memory (the SQLite relay's too, its
// buckets stay in the process) and Redis. Workers: test/workerd/limits-fair.test.ts.
import { describe } from 'vitest';
import { FAIR_SITES, fairCases } from './support/fair-limits.js';
import { limitsRelay, limitsStates } from './support/limits-relay.js';

const { states } = limitsStates('fair limits on Redis (test/relay/limits-fair.test.ts)');

describe.each(states)('limits that refuse a request on $name', ({ state }) => {
  const { post } = limitsRelay({ sites: FAIR_SITES, state });
  fairCases(
    async (site, ip) => {
      const response = await post(ip, 1, { site });
      const body = (await response.json()) as { error?: { code: string } };
      return { status: response.status, code: body.error?.code, retryAfter: response.headers.get('retry-after') };
    },
    (n) => `198.18.0.${n}`,
  );
});
