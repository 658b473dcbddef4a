/**
 * A request refused by one of its limits spends nothing of the others (ingest/guard.ts
 * `checkRate`): a visitor over its own allowance takes nothing from its site's cap, so the site's
 * other visitors are not held back by it, and a request the site's cap refuses takes nothing from
 * the visitor's own allowance, so the visitor is served once the site has room again. Over HTTP on
 * Node and in workerd alike; imports nothing from Node.
 */
import { expect, it } from 'vitest';

/** What a visitor's allowance is in these cases: `burst` requests, then one per 100 s. */
export const FAIR_VISITOR_BURST = 3;

/** The sites these cases expect of the relay, with the visitor allowance {@link FAIR_VISITOR_BURST}. */
export const FAIR_SITES = [
  // A cap of one more than a visitor may send, refilling too slowly to matter in a test.
  { key: 'pk_fair_cap', rate_limit: { per_second: 0.01, burst: FAIR_VISITOR_BURST + 1 } },
  // Room for one request every 2 s across the site.
  { key: 'pk_fair_full', rate_limit: { per_second: 0.5, burst: 1 } },
].map((site) => ({ ...site, visitor_rate_limit: { per_second: 0.01, burst: FAIR_VISITOR_BURST, queue_ms: 0 } }));

/** One answer: its status, its error code when refused, its Retry-After. */
export interface FairAnswer {
  status: number;
  code: string | undefined;
  retryAfter: string | null;
}

/** Sends one one-item request to the site keyed `site` from the client address `ip`. */
export type FairPost = (site: string, ip: string) => Promise<FairAnswer>;

/**
 * Waits, if need be, until the wall clock's current window of `periodMs` has at least `needMs`
 * left: the Workers Rate Limiting binding (as workerd runs it locally) counts in windows aligned to
 * the wall clock, all keys rolling over at once, so requests that must meet one count cannot
 * straddle a boundary (a fourth request past it meets a fresh count and is served).
 */
export async function withinOneWindow(periodMs: number, needMs: number): Promise<void> {
  const left = periodMs - (Date.now() % periodMs);
  if (left < needMs) await new Promise((resolve) => setTimeout(resolve, left + 50));
}

/**
 * The cases, for the enclosing describe's relay, whose sites are {@link FAIR_SITES}; `ips` tells
 * the visitors of each case apart; `counted`, when the visitors' allowance counts in windows of the
 * wall clock, makes room for a case's requests in one of them ({@link withinOneWindow}).
 */
export function fairCases(post: FairPost, ips: (n: number) => string, counted: () => Promise<void> = async () => {}): void {
  it("takes nothing from the site's cap for a request the visitor's own limit refuses, so other visitors are still served", async () => {
    const [heavy, other] = [ips(1), ips(2)];
    await counted();
    // Its allowance sent at once, so that its four requests take two requests' time in a window of the wall clock.
    expect((await Promise.all(Array.from({ length: FAIR_VISITOR_BURST }, () => post('pk_fair_cap', heavy)))).map((answer) => answer.status)).toEqual(
      Array(FAIR_VISITOR_BURST).fill(200),
    );
    // One more than its own allowance: refused, and the site's last token stays for the others.
    expect(await post('pk_fair_cap', heavy)).toMatchObject({ status: 429, code: 'rate_limited' });
    expect(await post('pk_fair_cap', other)).toMatchObject({ status: 200 });
    // Now the site's cap is spent: refused whoever asks.
    expect(await post('pk_fair_cap', ips(3))).toMatchObject({ status: 429, code: 'rate_limited' });
  }, 30_000);

  it("takes nothing from the visitor's own allowance for a request the site's cap refuses, so it is served after the Retry-After", async () => {
    const visitor = ips(4);
    // As many requests as the visitor has tokens, at once: the site's one token serves one of them,
    // and the site, full, refuses the others. Sent after the first was answered (its items put in
    // the outbox), they could meet a site refilled (a token every 2 s) on a loaded machine.
    const answers = await Promise.all(Array.from({ length: FAIR_VISITOR_BURST }, () => post('pk_fair_full', visitor)));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(1);
    const refused = answers.filter((answer) => answer.status !== 200);
    for (const answer of refused) expect(answer).toMatchObject({ status: 429, code: 'rate_limited' });
    const retryAfter = Math.max(...refused.map((answer) => Number(answer.retryAfter)));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(2);
    // Back after the Retry-After, as the snippet comes back: the visitor still has its tokens.
    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 100));
    expect(await post('pk_fair_full', visitor)).toMatchObject({ status: 200 });
  }, 30_000);
}
