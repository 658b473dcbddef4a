/**
 * What a visitor queue (`queue_ms`) must look like from outside, over HTTP on Node and in workerd
 * alike: a site whose visitors may send a burst of 20, then 4 a second, with a queue of 2.5 s (10
 * requests may wait, a place freeing every 250 ms). Tokens come slowly on purpose: the requests of
 * a burst reach the relay over tens to hundreds of ms on a busy machine (each on a connection of
 * its own), and every 250 ms of that spread may serve one more of them; at 10 a second, a spread of
 * 300 ms under a loaded CI served 35 of 36. Imports nothing from Node: workerd tests use it too.
 */
import { expect, it } from 'vitest';

/** One answer: its status, its Retry-After, and ms from when the burst was sent to when it came. */
export interface Answer {
  status: number;
  retryAfter: string | null;
  ms: number;
}

/** The visitor rate these checks expect of the relay's site. */
export const QUEUED_VISITOR_RATE = { per_second: 4, burst: 20, queue_ms: 2_500 };

/**
 * 25 requests at once from one visitor, 5 past its burst: all served, the last about its token time
 * (1,250 ms) later than the burst's own. The burst's twentieth answer is the reference: what a loaded
 * machine adds to every request's handling (4.4 s for the slowest of 25 in workerd at load 15, while
 * the queue held it its 1.25 s) is in both.
 */
function expectServedLater(answers: readonly Answer[]): void {
  expect(answers.map((answer) => answer.status)).toEqual(Array(25).fill(200));
  const times = answers.map((answer) => answer.ms).sort((a, b) => a - b);
  const slowest = times[24]!;
  const burstServed = times[19]!;
  expect(slowest, `answers at ${times.join(', ')} ms`).toBeGreaterThanOrEqual(1_000);
  expect(slowest - burstServed, `answers at ${times.join(', ')} ms`).toBeLessThan(3_000);
}

/**
 * 36 requests at once from one visitor (`flood`) beside 30 other visitors sending one each
 * (`others`): 20 served at once and 10 after waiting (a token or two more may come while the 36
 * arrive: one per 250 ms of their spread), the rest refused 429 with Retry-After 1; the others all served before the last waiting one.
 */
function expectQueueBounded(flood: readonly Answer[], others: readonly Answer[]): void {
  const served = flood.filter((answer) => answer.status === 200);
  const refused = flood.filter((answer) => answer.status === 429);
  expect(served.length + refused.length).toBe(36);
  expect(served.length).toBeGreaterThanOrEqual(30);
  expect(served.length).toBeLessThanOrEqual(32);
  for (const answer of refused) expect(answer.retryAfter).toBe('1');
  // The tenth waiting request's token comes 2,500 ms after the burst's first.
  const lastServed = Math.max(...served.map((answer) => answer.ms));
  expect(lastServed).toBeGreaterThanOrEqual(2_400);
  expect(others.map((answer) => answer.status)).toEqual(Array(30).fill(200));
  expect(Math.max(...others.map((answer) => answer.ms))).toBeLessThan(lastServed);
}

/** Sends `count` one-item requests at once from the client address `ip`; `started`: when the ms of each answer count from. */
export type Burst = (ip: string, count: number, started?: number) => Promise<Answer[]>;

/** The cases, for the enclosing describe's relay, whose site has {@link QUEUED_VISITOR_RATE}. */
export function queueCases(burst: Burst): void {
  it('answers a visitor 5 requests past its burst 200, the last about its token time later', async () => {
    expectServedLater(await burst(`203.0.113.${Math.floor(Math.random() * 200) + 1}`, 25));
  }, 30_000);

  it('refuses past the queue with 429 and Retry-After, and keeps every other visitor from waiting behind it', async () => {
    const started = Date.now();
    const [flood, others] = await Promise.all([
      burst('198.51.100.77', 36, started),
      // 30 other visitors, one request each, at the same time.
      Promise.all(Array.from({ length: 30 }, (_, i) => burst(`192.0.2.${i + 1}`, 1, started))).then((all) => all.flat()),
    ]);
    expectQueueBounded(flood, others);
  }, 30_000);
}
