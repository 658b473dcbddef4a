/**
 * `POST /collect` from start to answer: envelope and limits, site key, origin, rate limit,
 * item checks, identity, enrichment, dedupe, forwarding (or queueing), results.
 * @module
 */
import type { RelayConfig, SiteConfig } from '../config.js';
import { originAllowed } from '../cors.js';
import { RelayHttpError } from '../errors.js';
import { chargeRefusals, type RateLimiter, visitorKey } from '../limits.js';
import type { RejectReason } from '../observe.js';
import { type DedupeScope, lookupCounter, type RelayStore } from '../store.js';
import { readCollectBody, type CollectBody, type CollectRequest } from './body.js';
import { enrichLocation, enrichmentOf, wantsAddress, type ClientInfo } from './enrich.js';
import type { Coalescer } from '../collect/coalesce.js';
import { forward, type EndpointCall, type ItemResult } from '../deliver/calls.js';
import { createIdentity, type Identity } from './identity.js';
import { applyIdentityRules, ENTRY_KINDS, platformCall } from './identity-rules.js';
import type { EntryKind } from '../deliver/outbox.js';
import { checkEntry, checkItem, type CheckedItem } from './items.js';
import { checkAddress, checkRate, checkRefusals, holdGate, type Hold } from './guard.js';
import { limitAddress } from '../client-ip.js';
import { shapeOf, type Shapes, type VisitorGate } from './shapes.js';
import type { Upstream } from '../deliver/caller.js';
import type { Clock } from '../deliver/send.js';

/** An accepted entry handed to a queue instead of the platform (Workers Queues). */
export interface QueuedEntry {
  site: string;
  id: string;
  endpoint: EndpointCall['endpoint'];
  envelope: Record<string, unknown>;
  entry: Record<string, unknown>;
}

/** What a queue producer took: the ids of every batch it sent, and why it stopped when it did not send them all. */
export interface Enqueued {
  taken: string[];
  failure?: unknown;
}

/** Hands entries to a queue; never throws: a failure comes back as `failure`, beside what was taken before it. */
export type Enqueue = (entries: QueuedEntry[]) => Promise<Enqueued>;

export interface CollectContext {
  config: RelayConfig;
  store: RelayStore;
  limiter: RateLimiter;
  clock: Clock;
  /** the relay's one caller of the platform */
  upstream: Upstream;
  random: () => number;
  /** when set, accepted entries go here and the answer does not wait for the platform */
  enqueue: Enqueue | undefined;
  /** when set, the activities/create calls of concurrent requests go as one */
  coalesce?: Coalescer | undefined;
  /** shapes the platform took lately (shapes.ts) */
  shapes: Shapes;
  /** one request with unknown shapes in flight per visitor */
  gate: VisitorGate;
}

export interface CollectOutcome {
  status: number;
  body: unknown;
  retryAfter?: number;
  /** for the log line and observers */
  site?: string | undefined;
  items?: number;
  results?: ItemResult[];
  /** the class of each rejection, by index in `results` */
  reasons?: Map<number, RejectReason>;
  /** items whose identity could not be verified (rejected under `required`, reduced under `optional`) */
  unverified?: number;
  upstream?: number[];
  /** something went wrong that the caller need not know (logged) */
  warning?: string;
}

const identities = new Map<string, Identity>();
function identityFor(config: RelayConfig): Identity | undefined {
  if (config.identitySecret === undefined) return undefined;
  const cacheKey = `${config.identityTtlSeconds}\u0000${config.identityLegacyHash}\u0000${config.identitySecret}`;
  let identity = identities.get(cacheKey);
  if (!identity) {
    identity = createIdentity(config.identitySecret, config.identityTtlSeconds, { legacyHash: config.identityLegacyHash });
    identities.set(cacheKey, identity);
  }
  return identity;
}

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
    throw new RelayHttpError(403, 'origin_not_allowed', `Origin ${origin} may not send to this site; add it to the site's "origins" in RELAY_SITES.`);
  }
}

/** Browser clocks further off than this are corrected (nearer ones are left exact). */
const MAX_CLOCK_SKEW_MS = 2 * 60_000;

/** The item's `ts` on the relay's clock: shifted by how far the browser's clock was off when it sent (`sent_at`). */
function eventTime(ts: string, skewMs: number): string {
  return skewMs === 0 ? ts : new Date(Date.parse(ts) + skewMs).toISOString();
}

function entryOf(item: CheckedItem, location: Record<string, unknown> | undefined, skewMs: number): Record<string, unknown> {
  const entry: Record<string, unknown> = {};
  if (item.type === 'identify') {
    entry['fields'] = item.input.fields;
    if (item.input.tags !== undefined) entry['tags'] = item.input.tags;
    if (item.input.unset_tags !== undefined) entry['unset_tags'] = item.input.unset_tags;
  } else {
    entry['activity_id'] = item.input.activity_id;
    if (item.input.person !== undefined) entry['fields'] = item.input.person;
    if (item.input.attributes !== undefined) entry['attributes'] = item.input.attributes;
    if (item.input.ts !== undefined) entry['created'] = eventTime(item.input.ts, skewMs);
  }
  if (location !== undefined) entry['location'] = location;
  return entry;
}

/** A failure's class and message for the log line (never an item's contents). */
const describe = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

/** Handles one /collect request; throws {@link RelayHttpError} for whole-request failures. */
export async function collect(ctx: CollectContext, request: CollectRequest, info: ClientInfo, named: { site?: string } = {}): Promise<CollectOutcome> {
  const { config, clock } = ctx;
  const started = clock.now();
  // The client address is limited before the body is read or parsed: a flood costs no parsing.
  const address = info.ip === undefined ? undefined : limitAddress(info.ip, config.ipv6Prefix);
  await checkAddress(ctx.limiter, address, started);
  const body = await readCollectBody(request);
  const site = config.sites.get(body.key);
  if (!site)
    throw new RelayHttpError(401, 'unknown_site_key', 'The key does not name a site of this relay; check the key given to cdp("init", …) against RELAY_SITES.');
  // Named for the log line and metrics even when the request fails from here on.
  named.site = site.name;
  checkOrigin(site, request.origin);
  await checkRate(ctx.limiter, site, address, started);
  const visitor = address === undefined ? undefined : visitorKey(site.key, address);
  await checkRefusals(ctx.limiter, site, visitor, started);
  const hold = { release: () => {} };
  let outcome: CollectOutcome;
  try {
    outcome = await collectItems(ctx, site, body, info, visitor, started, hold);
  } finally {
    hold.release();
  }
  const refused = [...(outcome.reasons?.values() ?? [])].filter((reason) => reason === 'platform').length;
  if (refused === 0) return outcome;
  try {
    await chargeRefusals(
      ctx.limiter,
      site.key,
      Array.from({ length: visitor === undefined ? 0 : refused }, () => visitor!),
      clock.now(),
    );
  } catch (error) {
    // The items' fate is decided; a limiter that failed only loses this count.
    outcome.warning = `${outcome.warning ? `${outcome.warning}; ` : ''}refusals_not_counted: ${describe(error)}`;
  }
  return outcome;
}

/** Everything after the request's gates: item checks, identity, dedupe, forwarding or queueing, the answer. */
async function collectItems(
  ctx: CollectContext,
  site: SiteConfig,
  body: CollectBody,
  info: ClientInfo,
  visitor: string | undefined,
  started: number,
  hold: Hold,
): Promise<CollectOutcome> {
  const { config, store, clock } = ctx;
  const deadline = started + config.budgetMs;

  const results = new Map<number, ItemResult>();
  const reasons = new Map<number, RejectReason>();
  const reject = (index: number, id: string, error: string, reason: RejectReason) => {
    results.set(index, { id, status: 'rejected', error, reason });
    reasons.set(index, reason);
  };
  const items: CheckedItem[] = [];
  // id -> index of its first valid copy; a later copy in the batch gets that copy's outcome, whatever it turns out to be.
  const first = new Map<string, number>();
  const repeats = new Map<number, number>();
  body.batch.forEach((raw, index) => {
    const checked = checkItem(raw, index, site);
    if (!checked.ok) reject(index, checked.id, checked.error, checked.reason);
    else if (first.has(checked.item.id)) repeats.set(index, first.get(checked.item.id)!);
    else {
      first.set(checked.item.id, index);
      items.push(checked.item);
    }
  });

  const identity = identityFor(config);
  const { rulings, subjects, unverified } = await applyIdentityRules(site, items, body.identity, identity, started);
  const enrichment = enrichmentOf(info, config.addressLookup);
  const skew = body.sentAt === undefined ? 0 : started - body.sentAt;
  const skewMs = Math.abs(skew) > MAX_CLOCK_SKEW_MS ? skew : 0;
  const pending: { item: CheckedItem; entry: Record<string, unknown>; kind: EntryKind }[] = [];
  for (const ruling of rulings) {
    const { item } = ruling;
    if (!ruling.ok) {
      reject(item.index, item.id, ruling.error, ruling.reason);
      continue;
    }
    // An item that may change nothing carries no location: not even the visitor's address.
    const entry = entryOf(item, ruling.locate ? enrichLocation(item.input.location, enrichment) : undefined, skewMs);
    const invalid = checkEntry(item.type, entry);
    if (invalid) reject(item.index, item.id, invalid, 'invalid');
    else pending.push({ item, entry, kind: ruling.kind });
  }

  if (!ctx.enqueue)
    await holdGate(
      ctx,
      site,
      visitor,
      pending.map((p) => p.item),
      deadline,
      hold,
    );

  // A lease outlives the longest a request can hold it (its platform budget) with room for a slow
  // settle; a relay that dies mid-forward holds its items back for no longer than this.
  const leaseMs = config.budgetMs + 10_000;
  const scope: DedupeScope = { site: site.key, queue: body.queue };
  // With a queue, ids are checked where they are already batched: in the consumer, against the
  // site's delivery ledger (workers/queue.ts). /collect then costs no state call at all.
  const claim = ctx.enqueue
    ? { fresh: pending.map((p) => p.item.id), duplicate: [], busy: [] }
    : pending.length > 0
      ? await store.claim(
          scope,
          pending.map((p) => p.item.id),
          started,
          leaseMs,
        )
      : { fresh: [], duplicate: [], busy: [] };
  const fresh = new Set(claim.fresh);
  const duplicate = new Set(claim.duplicate);
  for (const p of pending) {
    if (duplicate.has(p.item.id)) results.set(p.item.index, { id: p.item.id, status: 'duplicate' });
    else if (!fresh.has(p.item.id)) results.set(p.item.index, { id: p.item.id, status: 'retry', error: 'another request is forwarding this item right now' });
  }
  const going = pending.filter((p) => fresh.has(p.item.id));

  // The address-lookup budget is spent only on items that will really go.
  const asking = going.filter((p) => wantsAddress(p.entry['location'] as Record<string, unknown> | undefined));
  if (asking.length > 0) {
    const granted = await store.add(site.key, lookupCounter(started), asking.length, config.addressLookupMonthlyLimit);
    for (const p of asking.slice(granted)) {
      const location = { ...(p.entry['location'] as Record<string, unknown>) };
      delete location['address'];
      p.entry['location'] = location;
    }
  }

  // An upper bound of any call's size: the request itself plus what enrichment adds per item.
  const maxBytes = body.bytes + going.length * 1024;
  // Identifies first (a person must exist before their activities), in the order of ENTRY_KINDS.
  const groups = new Map<EntryKind, EndpointCall>(ENTRY_KINDS.map((kind) => [kind, { ...platformCall(kind, site.mergeBy), entries: [], maxBytes }]));
  for (const p of going) groups.get(p.kind)!.entries.push({ id: p.item.id, entry: p.entry });

  const statuses: number[] = [];
  let retryAfter = 0;
  let warning: string | undefined;
  if (ctx.enqueue && going.length > 0) {
    // What the queue took is accepted, even when a later batch failed: the consumer delivers it,
    // and skips an id delivered already. Only what the queue did not take is retried.
    const entries = [...groups.values()].flatMap((group) =>
      group.entries.map(({ id, entry }) => ({ site: site.key, id, endpoint: group.endpoint, envelope: group.envelope, entry })),
    );
    const { taken, failure } = await ctx.enqueue(entries);
    const takenIds = new Set(taken);
    if (failure !== undefined) {
      retryAfter = 5;
      warning = `queue_send_failed: ${describe(failure)}`;
    }
    for (const p of going) {
      results.set(
        p.item.index,
        takenIds.has(p.item.id)
          ? { id: p.item.id, status: 'accepted' }
          : { id: p.item.id, status: 'retry', error: 'the queue did not take the item; it was kept for later' },
      );
    }
  } else if (going.length > 0) {
    const forwarded = await forward({ upstream: ctx.upstream, clock, deadline, random: ctx.random, statuses, coalesce: ctx.coalesce }, [...groups.values()]);
    retryAfter = forwarded.retryAfter;
    ctx.shapes.learn(
      site.key,
      going.filter((p) => forwarded.results.get(p.item.id)?.status === 'accepted').map((p) => shapeOf(p.item)),
      clock.now(),
    );
    const accepted: string[] = [];
    const unsent: string[] = [];
    for (const p of going) {
      const result = forwarded.results.get(p.item.id) ?? { id: p.item.id, status: 'retry' as const, error: 'not sent' };
      if (result.status === 'rejected') {
        results.set(p.item.index, { ...result, reason: 'platform' });
        reasons.set(p.item.index, 'platform');
      } else results.set(p.item.index, result);
      (result.status === 'accepted' ? accepted : unsent).push(p.item.id);
    }
    // Marked forwarded only now that the platform took them: a crash before this re-sends, never loses. The platform has them either way, so a failing
    // store must not turn `accepted` into an error: the leases run out and the failure is logged.
    try {
      await store.settle(scope, { forwarded: accepted, until: clock.now() + config.dedupeTtlMs, released: unsent });
    } catch (error) {
      warning = `state_settle_failed: ${describe(error)}`;
    }
  }

  for (const [index, firstIndex] of repeats) {
    results.set(index, results.get(firstIndex)!);
    if (reasons.has(firstIndex)) reasons.set(index, reasons.get(firstIndex)!);
  }
  const ordered = body.batch.map((_, index) => results.get(index)!);
  const token = identity && subjects.length > 0 ? await identity.issue(site.key, subjects, clock.now()) : undefined;
  const log = { site: site.name, items: body.batch.length, results: ordered, reasons, unverified, upstream: statuses, ...(warning ? { warning } : {}) };
  const gotThrough = ordered.some((result) => result.status === 'accepted' || result.status === 'duplicate');
  if (retryAfter > 0 && !gotThrough) {
    const error = new RelayHttpError(
      503,
      'upstream_unavailable',
      `The platform did not take the items within the relay's time budget; none were lost: retry after ${retryAfter} s.`,
      { details: ordered, retryAfter },
    );
    return { status: 503, body: error.body, retryAfter, ...log };
  }
  return { status: 200, body: token === undefined ? { results: ordered } : { results: ordered, identity: token }, ...log };
}
