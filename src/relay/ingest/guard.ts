/**
 * The guards between a visitor and the platform key: rate limits (per client address before the
 * body is read; per visitor of a site and per site after), a visitor whose items the platform
 * refused too often is cut off and a site that drew many refusals holds back unproven items of
 * unknown shape (limits.ts refusal buckets; shapes.ts). The refusals themselves are charged by the
 * deliverer that meets them (limits.ts `chargeDelivered`), after the browser was answered.
 * @module
 */
import type { SiteConfig } from '../core/sites.js';
import type { Rate } from '../core/limits.js';
import { RelayHttpError } from '../core/errors.js';
import { addressKey, type Ask, type RateLimiter, refusalWait, siteKey } from '../core/limits.js';
import type { CollectContext } from './context.js';
import type { CheckedItem } from './items.js';
import { isKnown, shapeOf } from './shapes.js';

/**
 * Per-visitor limit (always), and the site-wide cap (only when the site sets `rate_limit`), taken
 * together or not at all (limits.ts `limitAll`): a request one of them refuses spends nothing of
 * the other, so a visitor refused by a full site keeps its own allowance, and one over its own
 * allowance takes nothing from the site's other visitors. A request whose client address is
 * unknown (`visitor` undefined: no socket, no trusted header) is limited site-wide only.
 * A visitor's request that reserved a coming token (`queue_ms`, limits.ts `Rate.queueMs`) waits
 * for it here, before anything is written or held: the idle room, a store call. A client
 * that leaves meanwhile changes nothing; its items are taken as if it had stayed.
 */
export async function checkRate(ctx: Pick<CollectContext, 'limiter' | 'clock'>, site: SiteConfig, visitor: string | undefined, now: number): Promise<void> {
  const asks: Ask[] = [];
  if (visitor !== undefined) asks.push({ key: visitor, rate: site.visitorRateLimit });
  if (site.rateLimit !== undefined) asks.push({ key: siteKey(site.key), rate: site.rateLimit });
  if (asks.length === 0) return;
  const decision = await ctx.limiter.limitAll(asks, now);
  if (decision.ok) {
    if ((decision.delayMs ?? 0) > 0) await ctx.clock.sleep(decision.delayMs!);
    return;
  }
  const retryAfter = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
  throw new RelayHttpError(429, 'rate_limited', 'Too many requests from this visitor or for this site; retry after the Retry-After seconds.', { retryAfter });
}

/** The client address's own bucket, across every site: checked before the body is read, so a flood from one address costs no reading or parsing. */
export async function checkAddress(limiter: RateLimiter, rate: Rate, address: string | undefined, now: number): Promise<void> {
  if (address === undefined) return;
  const decision = await limiter.limit(addressKey(address), rate, now);
  if (decision.ok) return;
  throw new RelayHttpError(429, 'rate_limited', 'Too many requests from this address; retry after the Retry-After seconds.', {
    retryAfter: Math.max(1, Math.ceil(decision.retryAfterMs / 1000)),
  });
}

/** A visitor whose requests drew too many platform refusals is cut off before anything of theirs reaches the platform again. */
export async function checkRefusals(limiter: RateLimiter, visitor: string | undefined, now: number): Promise<void> {
  if (visitor === undefined) return;
  const waitMs = await refusalWait(limiter, visitor, now);
  if (waitMs === 0) return;
  throw new RelayHttpError(
    429,
    'too_many_refusals',
    'The platform refused too many items from this visitor; fix what is sent (activity ids, attributes, values) and retry after the Retry-After seconds.',
    { retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) },
  );
}

/**
 * While the site's guard is closed (limits.ts `SITE_REFUSALS`), whether an item must wait: it
 * proves no person and the platform has not taken its shape lately (nor does the plan vouch for
 * it), which is what the refusals that closed the guard looked like. Proven items always go.
 */
export const heldByGuard = (ctx: Pick<CollectContext, 'shapes'>, site: SiteConfig, item: CheckedItem, verified: boolean, now: number): boolean =>
  !verified && !isKnown(ctx.shapes, site, item, now);

/**
 * Before the site's closed guard looks at the items: where the deliverer runs apart from ingest
 * (Workers), asks it once about the shapes of the unproven items not known here. A failed look
 * knows nothing more: those items are held, kept by the browser (logged as the request's warning).
 */
export async function recallShapes(
  ctx: Pick<CollectContext, 'shapes'>,
  site: SiteConfig,
  rulings: readonly { ok: boolean; item: CheckedItem; verified?: boolean }[],
  now: number,
): Promise<string | undefined> {
  if (ctx.shapes.recall === undefined) return undefined;
  const unknown = rulings.filter((ruling) => ruling.ok && ruling.verified !== true && !isKnown(ctx.shapes, site, ruling.item, now));
  if (unknown.length === 0) return undefined;
  try {
    await ctx.shapes.recall(
      site.key,
      unknown.map((ruling) => shapeOf(ruling.item)),
      now,
    );
    return undefined;
  } catch (error) {
    return `shapes_not_recalled: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** What an item held by the site's guard is answered: kept by the browser and sent again after the Retry-After seconds. */
export const GUARD_RETRY =
  "held back: the platform refused many unverified items of this site lately; nothing was lost, send it again after the answer's Retry-After";
