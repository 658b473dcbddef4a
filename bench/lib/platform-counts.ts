/**
 * What the delivery bench counts at the platform (the emulator's state and `GET /_emulator/calls`)
 * and what it makes of one set of simulated browsers: delivered in real time, latency, lost and
 * duplicated.
 */
import { identityHash } from '../../src/relay/index.js';
import { type Browsers, type BrowsersOptions, IDENTIFY_FIELD, ITEM_ATTRIBUTE, NO_ANSWER } from './browsers.js';

export const round = (n: number, digits = 2) => (Number.isFinite(n) ? Math.round(n * 10 ** digits) / 10 ** digits : null);
export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;

/** The bench deployment: the platform key, the site, its secret, the key's calls per second. */
export const PLATFORM_KEY = 'bench-platform-key';
export const SITE_KEY = 'pk_bench';
export const ORIGIN = 'https://shop.example.com';
export const SECRET = 'bench-identity-secret';
export const PLATFORM_RATE = 10;
/** 1 identify and 13 tracks per visitor: identifies are 7% of the items. */
export const ITEMS_PER_VISITOR = 14;
/** four activities, so no person nears the platform's 50 events per activity per day */
export const ACTIVITY_NAMES = ['bench-view', 'bench-click', 'bench-cart', 'bench-search'];
export const ACTIVITIES = ACTIVITY_NAMES.map((name) => `act:cm:${name}`);
/** The bench site's browsers' options for the relay at `relayUrl`: its key, origin, activities and the `user_hash` its server gives. */
export const benchSite = (relayUrl: string): Pick<BrowsersOptions, 'relayUrl' | 'siteKey' | 'origin' | 'activities' | 'userHash'> => ({
  relayUrl,
  siteKey: SITE_KEY,
  origin: ORIGIN,
  activities: ACTIVITIES,
  userHash: (email) => identityHash(SECRET, 'str::email', email),
});

export type Calls = Record<string, { calls: number; statuses: Record<string, number>; entries: number }>;

/** A call to the platform's API or the emulator's own routes, with the key. */
export async function platform<T>(url: string, key: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Defines the bench activities at the platform (each with the `item` attribute), spaced to the key's rate. */
export async function defineActivities(url: string): Promise<void> {
  for (const name of ACTIVITY_NAMES) {
    await platform(url, PLATFORM_KEY, '/v1/definitions/activity/create', { name, attributes: [{ name: 'item', display_type: 'text' }] });
    await new Promise((resolve) => setTimeout(resolve, 1000 / PLATFORM_RATE));
  }
}

export const callCounts = async (url: string, key: string) => (await platform<{ endpoints: Calls }>(url, key, '/_emulator/calls')).endpoints;

/** entries the platform applied (2xx) and calls made, over the delivery endpoints, since `before` */
export function callFigures(before: Calls, after: Calls) {
  let calls = 0;
  let limited = 0;
  let applied = 0;
  let entries = 0;
  for (const [endpoint, row] of Object.entries(after)) {
    const was = before[endpoint] ?? { calls: 0, statuses: {}, entries: 0 };
    const ok = (s: Record<string, number>) => Object.entries(s).reduce((n, [status, count]) => n + (status.startsWith('2') ? count : 0), 0);
    calls += row.calls - was.calls;
    limited += (row.statuses['429'] ?? 0) - (was.statuses['429'] ?? 0);
    if (endpoint === 'activities/create' || endpoint === 'person/merge') {
      applied += ok(row.statuses) - ok(was.statuses);
      entries += row.entries - was.entries;
    }
  }
  return { calls, limited, applied, entries };
}

/** When each item reached the platform (ms since the epoch), every time it did. */
export async function arrivals(url: string, key: string): Promise<Map<string, number[]>> {
  const state = await platform<{
    people: { fields: Record<string, unknown>; created_at: string; events: { attributes: Record<string, unknown>; received: number }[] }[];
  }>(url, key, '/_emulator/state');
  const seen = new Map<string, number[]>();
  const add = (id: unknown, at: number) => {
    if (typeof id !== 'string') return;
    const times = seen.get(id);
    if (times) times.push(at);
    else seen.set(id, [at]);
  };
  for (const person of state.people) {
    // the identify creates its person (the relay sends it before that person's tracks); a repeated merge leaves no trace
    add(person.fields[IDENTIFY_FIELD], Date.parse(person.created_at));
    for (const event of person.events) add(event.attributes[ITEM_ATTRIBUTE], event.received);
  }
  return seen;
}

/**
 * What one set of browsers made and what became of it: delivered in real time (applied before
 * `offerEnd`), created → platform latency, lost (accepted, never applied), duplicated (applied
 * more than once), held by the browsers at the end, `/collect` answers to what was sent while the
 * offer ran.
 */
export function itemFigures(b: Browsers, seen: Map<string, number[]>, offer: { start: number; end: number; endTick: number }) {
  const latencies: number[] = [];
  let inRealTime = 0;
  let duplicated = 0;
  let lost = 0;
  let heldAtEnd = 0;
  let accepted = 0;
  for (const [id, item] of b.made) {
    if (item.status === 'accepted' || item.status === 'duplicate') accepted++;
    const times = seen.get(id);
    if (times) {
      const first = Math.min(...times);
      latencies.push(first - item.at);
      if (first <= offer.end) inRealTime++;
      duplicated += times.length - 1;
    } else if (item.status === 'accepted' || item.status === 'duplicate') lost++;
    else if (item.status === undefined) heldAtEnd++;
  }
  latencies.sort((x, y) => x - y);
  const answers = b.calls.filter((c) => c.status !== 0 && c.sentAt <= offer.endTick).map((c) => c.ms);
  answers.sort((x, y) => x - y);
  const statuses: Record<string, number> = {};
  for (const c of b.calls) statuses[c.status] = (statuses[c.status] ?? 0) + 1;
  const offered = b.made.size;
  const offerSeconds = (offer.end - offer.start) / 1000;
  const identifies = [...b.made].filter(([, m]) => m.type === 'identify');
  return {
    items: offered,
    accepted,
    identifies: identifies.length,
    identifies_delivered: identifies.filter(([id]) => seen.has(id)).length,
    visitors: b.visitors(),
    delivered_in_real_time: inRealTime,
    delivered_in_real_time_share: round(inRealTime / offered, 3),
    delivered_per_second_in_real_time: Math.round(inRealTime / offerSeconds),
    delivered_after_drain: [...b.made.keys()].filter((id) => seen.has(id)).length,
    lost,
    duplicated,
    rejected: b.rejected(),
    answered_retry: b.retried(),
    retry_after: b.retryAfters(),
    held_by_browsers_at_end: heldAtEnd,
    browsers_holding_at_end: b.holding().slice(0, 10),
    collect_failures: b.errors(),
    /** requests the browsers gave up on after 30 s without an answer */
    collect_timeouts: b.errors()[NO_ANSWER] ?? 0,
    created_to_platform_ms: { p50: round(percentile(latencies, 50), 0), p99: round(percentile(latencies, 99), 0) },
    collect_ms: { p50: round(percentile(answers, 50)), p99: round(percentile(answers, 99)), requests: answers.length },
    collect_statuses: statuses,
  };
}

/**
 * After the load stopped (`offer.end`): how many of `b`'s items reached the platform only then
 * (the backlog the load left, in the browsers and the outbox), how long until the last of them,
 * and at what rate they went.
 */
export function drainFigures(b: Browsers, seen: Map<string, number[]>, offer: { end: number }) {
  let backlog = 0;
  let last = offer.end;
  for (const id of b.made.keys()) {
    const times = seen.get(id);
    if (times === undefined) continue;
    const first = times.reduce((a, t) => Math.min(a, t), Number.POSITIVE_INFINITY);
    if (first <= offer.end) continue;
    backlog++;
    last = Math.max(last, first);
  }
  const seconds = (last - offer.end) / 1000;
  return {
    delivered_after_load: backlog,
    after_load_seconds: round(seconds, 1),
    after_load_per_second: seconds > 0 ? Math.round(backlog / seconds) : null,
  };
}
