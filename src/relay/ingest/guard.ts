/**
 * The guards between a visitor and the platform key: a visitor or site whose items the platform
 * refused too often is cut off (limits.ts refusal buckets), and items of a kind the platform has
 * not taken lately go one request at a time per visitor (shapes.ts).
 * @module
 */
import type { SiteConfig } from '../config.js';
import { RelayHttpError } from '../errors.js';
import { type RateLimiter, refusalWait } from '../limits.js';
import type { CollectContext } from './collect.js';
import type { CheckedItem } from './items.js';
import { isKnown } from './shapes.js';

/** What a request holds until it has its answer: the visitor's gate, when it took it. */
export interface Hold {
  release: () => void;
}

/** A visitor (or a site) whose requests drew too many platform refusals is cut off before anything of theirs reaches the platform again. */
export async function checkRefusals(limiter: RateLimiter, site: SiteConfig, visitor: string | undefined, now: number): Promise<void> {
  const waitMs = await refusalWait(limiter, site.key, visitor, now);
  if (waitMs === 0) return;
  throw new RelayHttpError(
    429,
    'too_many_refusals',
    'The platform refused too many items from this visitor or this site; fix what is sent (activity ids, attributes, values) and retry after the Retry-After seconds.',
    { retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) },
  );
}

/**
 * Takes the visitor's gate when `items` include a kind the platform has not taken lately (released
 * through `hold` once the request is answered), then looks at the refusal buckets again: the request
 * it waited for may have drawn refusals. Items of known kinds pass at once.
 */
export async function holdGate(
  ctx: CollectContext,
  site: SiteConfig,
  visitor: string | undefined,
  items: readonly CheckedItem[],
  deadline: number,
  hold: Hold,
): Promise<void> {
  const now = () => ctx.clock.now();
  const risky = () => items.some((item) => !isKnown(ctx.shapes, site, item, now()));
  if (visitor === undefined || !risky()) return;
  const release = await ctx.gate.enter(visitor, risky, deadline, now);
  if (release === undefined) {
    throw new RelayHttpError(503, 'upstream_unavailable', "The visitor's earlier items are still with the platform; nothing was lost: retry after 1 s.", {
      retryAfter: 1,
    });
  }
  hold.release = release;
  await checkRefusals(ctx.limiter, site, visitor, now());
}
