// A visitor just over its rate is slowed, not refused, on Workers too (the Worker entry without the
// Rate Limiting binding keeps a visitor's bucket in the isolate: core/limits.ts, `queue_ms`): 5
// requests past the burst are answered 200 about their token time later, past the queue 429 with
// Retry-After, and other visitors do not wait behind the queue. The arithmetic on every limiter:
// test/relay/limits-queue.test.ts.
import { createExecutionContext, env } from 'cloudflare:test';
import { describe } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { type Answer, QUEUED_VISITOR_RATE, queueCases } from '../relay/support/queue-answers.js';
import { ORIGIN, siteKey, sites, track } from '../relay/suite/target.js';

const site = siteKey('queue');
// One env object for every request: one isolate's relay (build.ts keeps it per env). A burst of
// 20, 4 a second, a queue of 2.5 s: 10 requests may wait.
const isolateEnv = { ...env, RELAY_SITES: sites({ key: site, origins: [ORIGIN], visitor_rate_limit: QUEUED_VISITOR_RATE }) };

/** Sends `count` one-item requests at once from `ip`; each answer's status, Retry-After and ms since `started`. */
function burst(ip: string, count: number, started = Date.now()): Promise<Answer[]> {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const request = new Request('https://relay.example.com/collect', {
        method: 'POST',
        headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': ip },
        body: JSON.stringify({ key: site, batch: [track('act:cm:viewed', { 'str::email': `${ip}@example.com` })] }),
      });
      const response = await worker.fetch(request, isolateEnv as never, createExecutionContext());
      await response.arrayBuffer();
      return { status: response.status, retryAfter: response.headers.get('retry-after'), ms: Date.now() - started };
    }),
  );
}

describe('a visitor queue on Workers', () => {
  queueCases(burst);
});
