/**
 * The flood phase second by second (`bench/delivery.ts --only flood --timeline`): what the
 * flooding address's browsers were answered and how long they then waited, how many of them were
 * waiting, and what reached the platform, from the load's start to the last item, each second
 * counted from the load's end (negative while it ran). Printed only; nothing is written.
 */
import type { Browsers } from './browsers.js';

interface Second {
  s: number;
  /** the flood's `/collect` answers in this second, by status */
  'status 200': number;
  'status 429': number;
  'status 503': number;
  'other status': number;
  /** its items the answers settled (accepted, duplicate, rejected) and told to `retry` */
  settled: number;
  retry: number;
  /** the Retry-After values answered */
  'retry-after': string;
  /** the waits its browsers took after a refusal: mean and longest, ms */
  'wait ms': number;
  'max wait ms': number;
  /** its browsers waiting (in a backoff) when the second began */
  waiting: number;
  /** items that reached the platform in this second: the flood's and the others' */
  'flood at platform': number;
  'others at platform': number;
}

export function floodTimeline(flood: Browsers, others: Browsers, seen: Map<string, number[]>, end: number): Second[] {
  const second = (at: number) => Math.floor((at - end) / 1000);
  const rows = new Map<number, Second & { waits: number[] }>();
  const row = (s: number) => {
    const existing = rows.get(s);
    if (existing) return existing;
    const added = {
      s,
      'status 200': 0,
      'status 429': 0,
      'status 503': 0,
      'other status': 0,
      settled: 0,
      retry: 0,
      'retry-after': '',
      'wait ms': 0,
      'max wait ms': 0,
      waiting: 0,
      'flood at platform': 0,
      'others at platform': 0,
      waits: [],
    };
    rows.set(s, added);
    return added;
  };
  const retryAfters = new Map<number, Set<string>>();
  for (const call of flood.calls) {
    const r = row(second(call.answeredAt));
    const status = `status ${call.status}`;
    if (status === 'status 200' || status === 'status 429' || status === 'status 503') r[status]++;
    else r['other status']++;
    r.settled += call.settled;
    r.retry += call.retried;
    if (call.waitMs > 0) r.waits.push(call.waitMs);
    if (call.retryAfter !== undefined) retryAfters.set(r.s, (retryAfters.get(r.s) ?? new Set()).add(call.retryAfter));
  }
  const arrived = (set: Browsers, column: 'flood at platform' | 'others at platform') => {
    for (const id of set.made.keys()) {
      const times = seen.get(id);
      if (times) row(second(Math.min(...times)))[column]++;
    }
  };
  arrived(flood, 'flood at platform');
  arrived(others, 'others at platform');
  // Each browser's answers in order: it waits from an answer until the wait that answer set ends.
  const byBrowser = new Map<number, { at: number; until: number }[]>();
  for (const call of flood.calls) {
    const list = byBrowser.get(call.browser) ?? [];
    list.push({ at: call.answeredAt, until: call.answeredAt + call.waitMs });
    byBrowser.set(call.browser, list);
  }
  const first = Math.min(...rows.keys());
  const last = Math.max(...rows.keys());
  const out: Second[] = [];
  for (let s = first; s <= last; s++) {
    const { waits, ...r } = row(s);
    const t = end + s * 1000;
    for (const list of byBrowser.values()) {
      const before = list.filter((answer) => answer.at <= t).at(-1);
      if (before && before.until > t) r.waiting++;
    }
    r['retry-after'] = [...(retryAfters.get(s) ?? [])].join(',');
    r['wait ms'] = waits.length ? Math.round(waits.reduce((a, b) => a + b, 0) / waits.length) : 0;
    r['max wait ms'] = waits.length ? Math.round(Math.max(...waits)) : 0;
    out.push(r);
  }
  return out;
}
