/**
 * What the delivery benches read at the platform (the emulator): its call counts per endpoint
 * (`GET /_emulator/calls`) and when it applied each bench item, every time it did
 * (`GET /_emulator/state`; the item's id rides in the attribute or person field of
 * bench/lib/browsers.ts).
 */
import { IDENTIFY_FIELD, ITEM_ATTRIBUTE } from './browsers.js';

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

/** Defines the bench activities at the platform (each with the `item` attribute), spaced to the key's rate. */
export async function defineActivities(url: string): Promise<void> {
  for (const name of ACTIVITY_NAMES) {
    await platform(url, PLATFORM_KEY, '/v1/definitions/activity/create', { name, attributes: [{ name: 'item', display_type: 'text' }] });
    await new Promise((resolve) => setTimeout(resolve, 1000 / PLATFORM_RATE));
  }
}

export type Calls = Record<string, { calls: number; statuses: Record<string, number>; entries: number }>;

/** A call to the emulator with the platform key; throws on a non-2xx answer. */
export async function platform<T>(url: string, key: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
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
