/**
 * `POST /collect`, the ingest half of the relay, from arrival to answer: the body within its
 * limits, the site and its origin, the visitor's and the site's limits, each item's checks,
 * identity, enrichment, the window, then the hand-off that makes the items durable (the outbox:
 * a store on Node, Durable Objects on Workers), and the answer. It never waits for the platform:
 * the delivery engine (src/relay/deliver/) sends the items later.
 * @module
 */
import type { ItemResult, RejectReason } from '../../api/collect.js';
import type { RelayConfig } from '../core/config.js';
import type { SiteConfig } from '../core/sites.js';
import { originAllowed } from '../core/cors.js';
import { quoteId } from '../../api/objects.js';
import { RelayHttpError } from '../core/errors.js';
import { limitAddress } from '../core/client-ip.js';
import { addressRate, type Rate, siteGuardWait, visitorKey } from '../core/limits.js';
import { lookupCounter } from '../state/store.js';
import { readCollectBody, type CollectBody, type CollectRequest } from './body.js';
import { enrichLocation, enrichmentOf, wantsAddress, type ClientInfo, type Enrichment } from './enrich.js';
import type { Prepared } from './handoff.js';
import { budgetPeople } from './unproven.js';
import { PEOPLE_BUDGET } from '../core/outbox-limits.js';
import { identityFor } from './identity.js';
import { applyIdentityRules, vouchedRulings } from './identity-rules.js';
import { checkAddress, checkRate, checkRefusals, GUARD_RETRY, heldByGuard, recallShapes } from './guard.js';
import { checkEntry, checkItem, type CheckedItem } from './items.js';
import type { CollectContext, CollectOutcome } from './context.js';

const SUPPRESSED = 'the person this item names was erased at the relay and is suppressed: it is not stored or sent';

/** Browser clocks further off than this are corrected (nearer ones are left exact). */
const MAX_CLOCK_SKEW_MS = 2 * 60_000;

function checkOrigin(site: SiteConfig, origin: string | undefined): void {
  if (origin === undefined) {
    if (!site.allowNoOrigin)
      throw new RelayHttpError(
        403,
        'origin_required',
        'This site accepts requests from browsers only (no Origin header was sent); set "allow_no_origin": true on the site to accept server calls.',
      );
    return;
  }
  if (!originAllowed(origin, site.origins)) {
    throw new RelayHttpError(403, 'origin_not_allowed', `Origin ${quoteId(origin)} may not send to this site; add it to the site's "origins" in RELAY_SITES.`);
  }
}

/**
 * When the item happened on the relay's clock (ms): its `ts` (`sent`, parsed) shifted by how far
 * the browser's clock was off when it sent (`sent_at`), never later than now.
 */
function eventTime(sent: number | undefined, skewMs: number, now: number): number {
  if (sent === undefined) return now;
  return Math.min(now, sent + skewMs);
}

/** `created` as the platform gets it: the item's own `ts` when the relay's clock agrees (`sent` is `at`), else the corrected time. */
function createdOf(ts: string | undefined, sent: number | undefined, at: number): string | undefined {
  if (ts === undefined) return undefined;
  return sent === at ? ts : new Date(at).toISOString();
}

function entryOf(item: CheckedItem, location: Record<string, unknown> | undefined, sent: number | undefined, at: number): Record<string, unknown> {
  const entry: Record<string, unknown> = {};
  if (item.type === 'identify') {
    entry['fields'] = item.input.fields;
    if (item.input.tags !== undefined) entry['tags'] = item.input.tags;
    if (item.input.unset_tags !== undefined) entry['unset_tags'] = item.input.unset_tags;
  } else {
    entry['activity_id'] = item.input.activity_id;
    if (item.input.person !== undefined) entry['fields'] = item.input.person;
    if (item.input.attributes !== undefined) entry['attributes'] = item.input.attributes;
    const created = createdOf(item.input.ts, sent, at);
    if (created !== undefined) entry['created'] = created;
  }
  if (location !== undefined) entry['location'] = location;
  return entry;
}

/** A rejected item's result. */
const rejected = (id: string, error: string, reason: RejectReason): ItemResult => ({ id, status: 'rejected', error, reason });
const gotThrough = (result: ItemResult) => result.status === 'accepted' || result.status === 'duplicate';
const waits = (result: ItemResult) => result.status === 'retry';
const asksAddress = (p: Prepared) => wantsAddress(p.entry['location'] as Record<string, unknown> | undefined);

const addressRates = new WeakMap<RelayConfig, Rate>();
/** The pre-parse rate of a client address under `config` (limits.ts `addressRate`), worked out once. */
function addressRateOf(config: RelayConfig): Rate {
  let rate = addressRates.get(config);
  if (rate === undefined) {
    rate = addressRate([...config.sites.values()].map((site) => site.visitorRateLimit));
    addressRates.set(config, rate);
  }
  return rate;
}

/** Handles one /collect request; throws {@link RelayHttpError} for whole-request failures. */
export async function collect(ctx: CollectContext, request: CollectRequest, info: ClientInfo, named: { site?: string } = {}): Promise<CollectOutcome> {
  const { config, clock } = ctx;
  const started = clock.now();

  // The request: the client address's limit before the body is read or parsed (a flood costs no
  // parsing), then the body, site, origin, the visitor's and the site's limits and refusals.
  const address = info.ip === undefined ? undefined : limitAddress(info.ip, config.ipv6Prefix);
  await checkAddress(ctx.limiter, addressRateOf(config), address, started);
  const body = await readCollectBody(request);
  const site = config.sites.get(body.key);
  if (!site)
    throw new RelayHttpError(401, 'unknown_site_key', 'The key does not name a site of this relay; check the key given to cdp("init", …) against RELAY_SITES.');
  // Named for the log line and metrics even when the request fails from here on.
  named.site = site.name;
  checkOrigin(site, request.origin);
  const visitor = address === undefined ? undefined : visitorKey(site.key, address);
  await checkRate(ctx, site, visitor, started);
  // A visitor cut off for its refusals is answered 429; the site's guard only holds back items like theirs.
  const [, guardMs] = await Promise.all([checkRefusals(ctx.limiter, visitor, started), siteGuardWait(ctx.limiter, site.key, started)]);
  // The platform's refusals of these items count against the visitor once the deliverer meets them (app/handoff.ts; on Workers, workers/delivery.ts).
  return collectItems(ctx, site, body, info, { visitor, started, guardMs });
}

/**
 * Everything after the request's gates: item checks, identity, the window, the hand-off, the answer.
 * `vouched`: the server door's items, each proven by the server that sent it (identity-rules.ts
 * `vouchedRulings`), with the visitor's address they carry kept.
 */
export async function collectItems(
  ctx: CollectContext,
  site: SiteConfig,
  body: CollectBody,
  info: ClientInfo,
  { visitor, started, guardMs, vouched = false }: { visitor: string | undefined; started: number; guardMs: number; vouched?: boolean },
): Promise<CollectOutcome> {
  const { config, store, clock } = ctx;

  // Each item on its own: a bad one is rejected with a reason, the rest go on. One result per item, by its place in the batch.
  const { batch } = body;
  const results = new Array<ItemResult>(batch.length);
  const items: CheckedItem[] = [];
  // id -> index of its first valid copy; a later copy in the batch gets that copy's outcome, whatever it turns out to be (none to look for in a batch of one).
  const first = batch.length > 1 ? new Map<string, number>() : undefined;
  /** index -> index of its first copy, made for the first repeat (most batches have none) */
  let repeats: Map<number, number> | undefined;
  for (let index = 0; index < batch.length; index++) {
    const checked = checkItem(batch[index], index, site);
    if (!checked.ok) results[index] = rejected(checked.id, checked.error, checked.reason);
    else if (first?.has(checked.item.id)) {
      repeats ??= new Map();
      repeats.set(index, first.get(checked.item.id)!);
    } else {
      first?.set(checked.item.id, index);
      items.push(checked.item);
    }
  }

  // Identity, enrichment, the window: what goes becomes the platform entry it will be sent as.
  const identity = identityFor(config, ctx.hmac);
  const { rulings, subjects, expires, unverified } = vouched ? vouchedRulings(items) : await applyIdentityRules(site, items, body.identity, identity, started);
  // Made for the first item that carries a location (an unverified item carries none).
  let enrichment: Enrichment | undefined;
  const skew = body.sentAt === undefined ? 0 : started - body.sentAt;
  const skewMs = Math.abs(skew) > MAX_CLOCK_SKEW_MS ? skew : 0;
  const oldest = started - config.windowMs;
  const going: Prepared[] = [];
  // Items naming a person erased at this relay are refused, never stored (suppression.ts).
  const suppressed = ctx.suppression === undefined ? undefined : await ctx.suppression.check(site.key, started);
  let guarded = 0;
  const unrecalled = guardMs > 0 ? await recallShapes(ctx, site, rulings, started) : undefined;
  for (const ruling of rulings) {
    const { item } = ruling;
    // The item's own time, parsed once (its check made sure it is an ISO time).
    const sent = item.input.ts === undefined ? undefined : Date.parse(item.input.ts);
    const at = eventTime(sent, skewMs, started);
    if (at < oldest) {
      const hours = Math.round(config.windowMs / 3600_000);
      results[item.index] = rejected(
        item.id,
        `the item is older than the relay's window (${hours} h): it can no longer be told apart from one delivered before`,
        'expired',
      );
      continue;
    }
    if (!ruling.ok) {
      results[item.index] = rejected(item.id, ruling.error, ruling.reason);
      continue;
    }
    if (guardMs > 0 && heldByGuard(ctx, site, item, ruling.verified, started)) {
      results[item.index] = { id: item.id, status: 'retry', error: GUARD_RETRY };
      guarded++;
      continue;
    }
    // An item that may change nothing carries no location: not even the visitor's address.
    if (ruling.locate) enrichment ??= { ...enrichmentOf(info, config.addressLookup, site.sourceIp), keepSourceIp: vouched };
    const entry = entryOf(item, ruling.locate ? enrichLocation(item.input.location, enrichment!) : undefined, sent, at);
    const invalid = checkEntry(item.type, entry);
    if (invalid) results[item.index] = rejected(item.id, invalid, 'invalid');
    else if (suppressed?.(entry)) results[item.index] = rejected(item.id, SUPPRESSED, 'suppressed');
    else going.push({ index: item.index, id: item.id, kind: ruling.kind, entry, proven: vouched || ruling.verified });
  }
  // Unproven identifies create people within the site's budget (unproven.ts).
  const budget = await budgetPeople(ctx.limiter, site.key, config.unproven, going, started);
  for (const { index, result } of budget.held) results[index] = result;

  // The address-lookup budget is spent only on items that go (most ask none: no list made then).
  const asking = budget.going.some(asksAddress) ? budget.going.filter(asksAddress) : undefined;
  if (asking !== undefined) {
    const granted = await store.add(site.key, lookupCounter(started), asking.length, config.addressLookupMonthlyLimit);
    for (const p of asking.slice(granted)) {
      const location = { ...(p.entry['location'] as Record<string, unknown>) };
      delete location['address'];
      p.entry['location'] = location;
    }
  }

  // Durable, then answered.
  const handed =
    budget.going.length > 0
      ? await ctx.handoff({
          site,
          items: budget.going,
          browser: body.queue ?? visitor ?? '',
          // '' when the client address is unknown: the site's own refusal bucket is still charged
          visitor: visitor ?? '',
          queue: body.queue,
          now: started,
          bytes: body.bytes,
        })
      : { results: new Map<string, ItemResult>(), retryAfter: 0 };
  for (const p of budget.going) results[p.index] = handed.results.get(p.id) ?? { id: p.id, status: 'retry', error: 'not handed on' };
  if (repeats !== undefined) for (const [index, firstIndex] of repeats) results[index] = results[firstIndex]!;
  const token = identity && subjects.length > 0 ? await identity.issue(site.key, subjects, clock.now(), expires) : undefined;
  // The outcome's fields for the log line and observers, set on the outcome itself (answer.ts).
  const outcome: CollectOutcome = { status: 200, body: undefined, site: site.name, items: batch.length, results, unverified };
  if (handed.warning || unrecalled) outcome.warning = [handed.warning, unrecalled].filter(Boolean).join('; ');
  const retryAfter = Math.max(handed.retryAfter ?? 0, guarded > 0 ? Math.ceil(guardMs / 1000) : 0, budget.retryAfter);
  if (retryAfter > 0 && !results.some(gotThrough)) {
    const error = new RelayHttpError(
      503,
      handed.code ?? (budget.held.length > 0 ? PEOPLE_BUDGET : 'upstream_unavailable'),
      `The relay could not take the items right now; none were lost: retry after ${retryAfter} s.`,
      {
        details: results,
        retryAfter,
      },
    );
    outcome.status = 503;
    outcome.body = error.body;
    outcome.retryAfter = retryAfter;
    return outcome;
  }
  const window = Math.floor(config.windowMs / 1000);
  outcome.body = token === undefined ? { results, window } : { results, identity: token, window };
  // Some went through, others wait: Retry-After tells the browser when to send those again.
  if (retryAfter > 0 && results.some(waits)) outcome.retryAfter = retryAfter;
  return outcome;
}
