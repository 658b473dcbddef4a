/**
 * Capacity kept for proven visitors (docs/security.md). Anyone can send unproven items (no valid
 * `user_hash` or identity token, no server token), from as many networks as they like, each within
 * its visitor limits; without a bound of their own they would take the site's whole outbox, and
 * every identify may create a person the site pays for. So:
 * - **the outbox**: unproven items are stored only while the site's waiting entries (and the whole
 *   outbox's) are under `RELAY_OUTBOX_UNPROVEN_SHARE` of its limits (half by default); past that
 *   they are answered `retry` (`outbox_unproven_full`), and proven items still go in, up to the
 *   whole limit (handoff.ts);
 * - **new people**: an unproven identify takes one token of its site's budget,
 *   `RELAY_UNPROVEN_PEOPLE_PER_MINUTE` (600, refilled evenly over the minute); past it, it is
 *   answered `retry` (`people_budget`) with the wait until the next token. The budget is a bucket
 *   of the relay's limiter, shared by every process (Redis) or isolate (a Durable Object).
 * @module
 */
import { PEOPLE_BUDGET, type UnprovenLimits } from '../core/outbox-limits.js';
import type { RateLimiter } from '../core/limits.js';
import type { ItemResult } from '../../api/collect.js';
import type { Prepared } from './handoff.js';

/** The limiter key of a site's budget of people created by unproven identifies (a Durable Object's bucket on Workers). */
export const peopleKey = (site: string): string => `people:${site}`;

/** An unproven identify: it may create a person. */
const creates = (item: Prepared) => !item.proven && item.kind !== 'activity';

/**
 * Takes a token of the site's budget for each unproven identify of `going` (an identify that may
 * create a person); resolves to the items that go, and a `retry` result for each of the others,
 * with the seconds until the budget has a token again.
 */
export async function budgetPeople(
  limiter: RateLimiter,
  site: string,
  limits: UnprovenLimits,
  going: readonly Prepared[],
  now: number,
): Promise<{ going: readonly Prepared[]; held: { index: number; result: ItemResult }[]; retryAfter: number }> {
  // Most requests create no one: no list of none made for them.
  if (!going.some(creates)) return { going, held: [], retryAfter: 0 };
  const creating = going.filter(creates);
  const rate = { perSecond: limits.peoplePerMinute / 60, burst: limits.peoplePerMinute };
  // One token each, taken one at a time (nothing taken when there is none): the budget is never passed however many requests race.
  const refused = new Set<Prepared>();
  let waitMs = 0;
  for (const item of creating) {
    const decision = await limiter.limit(peopleKey(site), rate, now);
    if (decision.ok) continue;
    refused.add(item);
    waitMs = Math.max(waitMs, decision.retryAfterMs);
  }
  const held = [...refused].map((item) => ({
    index: item.index,
    result: {
      id: item.id,
      status: 'retry' as const,
      error: `${PEOPLE_BUDGET}: this site's unproven identifies have created as many people as it allows a minute; send it again after the answer's Retry-After`,
    },
  }));
  return { going: going.filter((item) => !refused.has(item)), held, retryAfter: held.length > 0 ? Math.max(1, Math.ceil(waitMs / 1000)) : 0 };
}
