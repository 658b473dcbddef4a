/**
 * The status page: items/s and errors/s over the last 15 minutes and the last rejected items,
 * for a person looking at one relay. The recorder is an observer of the relay's events; the page
 * is plain HTML with inline SVG charts that reloads itself, built with Hono's `html` tag (every
 * value escaped).
 * @module
 */
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import { scrub } from '../core/logging.js';
import { type CollectEvent, type DeliveryEvent, type RelayObserver, UNKNOWN_SITE } from '../core/observe.js';

export interface StatusOptions {
  /** @default Date.now */
  now?: () => number;
  /** how far back the charts reach @default 15 minutes */
  windowMs?: number;
  /** one point of a chart @default 10 s */
  bucketMs?: number;
  /** how many rejected items are listed @default 50 */
  keep?: number;
}

/** One bucket of the charts: its start and what happened in it. */
export interface StatusBucket {
  at: number;
  requests: number;
  items: number;
  /** rejected items plus requests that failed as a whole */
  errors: number;
}

export interface RejectedItem {
  at: number;
  site: string;
  id: string;
  reason: string;
  error: string;
}

/** An accepted entry the platform refused afterwards, or held because its call's outcome is unknown. */
export interface DeadLetterRow {
  at: number;
  site: string;
  id: string;
  /** `ambiguous`, or the platform's refusal (`refused: …`, `invalid: …`) */
  reason: string;
}

export interface StatusSnapshot {
  now: number;
  bucketMs: number;
  /** oldest first, the current (partial) bucket last */
  buckets: StatusBucket[];
  /** newest first */
  rejected: RejectedItem[];
  /** newest first: entries moved to the dead-letter list (`cdp-edge outbox list` shows them all) */
  deadLetters: DeadLetterRow[];
  /** since the recorder started */
  totals: { requests: number; items: number; errors: number; delivered: number; dead: number; ambiguous: number };
  /** the send margin the deliverer keeps for the key, as of its last call (state/margin.ts); undefined until it makes one */
  margin?: number | undefined;
}

export interface StatusRecorder {
  observer: RelayObserver;
  /** counts one /collect answer; `itemCount` when `event.items` holds only its rejected items (events of other processes) */
  record(event: CollectEvent, itemCount?: number): void;
  snapshot(): StatusSnapshot;
}

export function createStatusRecorder(options: StatusOptions = {}): StatusRecorder {
  const now = options.now ?? Date.now;
  const bucketMs = options.bucketMs ?? 10_000;
  const count = Math.ceil((options.windowMs ?? 15 * 60_000) / bucketMs);
  const keep = options.keep ?? 50;
  const buckets = new Map<number, StatusBucket>();
  const rejected: RejectedItem[] = [];
  const totals = { requests: 0, items: 0, errors: 0, delivered: 0, dead: 0, ambiguous: 0 };
  const deadLetters: DeadLetterRow[] = [];
  let margin: number | undefined;
  const delivery = (event: DeliveryEvent) => {
    if (event.margin !== undefined) margin = event.margin;
    totals.delivered += event.delivered;
    totals.ambiguous += event.ambiguous.length;
    const dead = [
      ...event.dead.map((letter) => ({ at: event.at, site: letter.site, id: letter.id, reason: scrub(letter.reason).slice(0, 200) })),
      ...(event.held ? event.ambiguous.map((entry) => ({ at: event.at, site: entry.site, id: entry.id, reason: 'ambiguous' })) : []),
    ];
    totals.dead += dead.length;
    deadLetters.unshift(...dead.reverse());
    if (deadLetters.length > keep) deadLetters.length = keep;
  };

  const bucketAt = (at: number) => {
    const start = Math.floor(at / bucketMs) * bucketMs;
    let bucket = buckets.get(start);
    if (bucket === undefined) {
      bucket = { at: start, requests: 0, items: 0, errors: 0 };
      buckets.set(start, bucket);
      // Forget what fell out of the window.
      const oldest = start - (count - 1) * bucketMs;
      for (const key of buckets.keys()) if (key < oldest) buckets.delete(key);
    }
    return bucket;
  };

  const record = (event: CollectEvent, itemCount = event.items.length) => {
    const bucket = bucketAt(event.at);
    const failed = event.status === 200 ? 0 : 1;
    let errors = failed;
    const site = event.site ?? UNKNOWN_SITE;
    for (const item of event.items) {
      if (item.status !== 'rejected') continue;
      errors++;
      rejected.unshift({ at: event.at, site, id: item.id, reason: item.reason ?? 'platform', error: item.error ?? '' });
    }
    if (rejected.length > keep) rejected.length = keep;
    bucket.requests++;
    bucket.items += itemCount;
    bucket.errors += errors;
    totals.requests++;
    totals.items += itemCount;
    totals.errors += errors;
  };

  return {
    observer: { collect: (event) => record(event), delivery },
    record,
    snapshot() {
      const at = now();
      const last = Math.floor(at / bucketMs) * bucketMs;
      const series: StatusBucket[] = [];
      for (let start = last - (count - 1) * bucketMs; start <= last; start += bucketMs) {
        series.push(buckets.get(start) ?? { at: start, requests: 0, items: 0, errors: 0 });
      }
      return { now: at, bucketMs, buckets: series, rejected: [...rejected], deadLetters: [...deadLetters], totals: { ...totals }, margin };
    },
  };
}

const WIDTH = 600;
const HEIGHT = 120;

/** A line chart of `values` per second, scaled to its peak, with the peak and the latest value written beside it. */
function chart(title: string, values: number[], colour: string): HtmlEscapedString | Promise<HtmlEscapedString> {
  const peak = Math.max(...values, 0);
  const top = peak > 0 ? peak : 1;
  const step = values.length > 1 ? WIDTH / (values.length - 1) : WIDTH;
  const points = values.map((value, index) => `${(index * step).toFixed(1)},${(HEIGHT - (value / top) * (HEIGHT - 4)).toFixed(1)}`).join(' ');
  const latest = values.at(-1) ?? 0;
  return html`<figure>
    <figcaption>${title}: <strong>${format(latest)}/s</strong> now, peak ${format(peak)}/s</figcaption>
    <svg viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${title} over the last 15 minutes">
      <rect width="${WIDTH}" height="${HEIGHT}" fill="#f6f8fa" />
      <polyline points="${points}" fill="none" stroke="${colour}" stroke-width="2" />
    </svg>
  </figure>`;
}

/** A margin as a percentage: 0.03 → 3%, 0.045 → 4.5%. */
const percent = (ratio: number) => `${Number((ratio * 100).toFixed(1))}%`;

const format = (perSecond: number) => (perSecond >= 10 ? perSecond.toFixed(0) : perSecond.toFixed(1));

/** The status page for `snapshot`; it reloads itself every `refreshSeconds`. */
export function renderStatusPage(snapshot: StatusSnapshot, refreshSeconds = 5): Promise<string> {
  const seconds = snapshot.bucketMs / 1000;
  const perSecond = (key: 'items' | 'errors') => snapshot.buckets.map((bucket) => bucket[key] / seconds);
  const rows = snapshot.rejected.map(
    (item) => html`<tr>
      <td>${new Date(item.at).toISOString().slice(11, 19)}</td>
      <td>${item.site}</td>
      <td><code>${item.id}</code></td>
      <td>${item.reason}</td>
      <td>${item.error}</td>
    </tr>`,
  );
  const page = html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta http-equiv="refresh" content="${refreshSeconds}" />
    <title>cdp-edge relay status</title>
    <style>
      ${raw(STYLE)}
    </style>
  </head>
  <body>
    <h1>cdp-edge relay</h1>
    <p>Last 15 minutes, one point per ${seconds} s, as of ${new Date(snapshot.now).toISOString().slice(0, 19)}Z. Since start:
      ${snapshot.totals.requests} requests, ${snapshot.totals.items} items, ${snapshot.totals.errors} errors;
      ${snapshot.totals.delivered} entries delivered, ${snapshot.totals.dead} dead letters, ${snapshot.totals.ambiguous} ambiguous${
        snapshot.margin === undefined ? '' : html`; send margin ${percent(snapshot.margin)} (3% until the platform answers 429)`
      }.</p>
    ${chart('Items', perSecond('items'), '#1f6feb')} ${chart('Errors', perSecond('errors'), '#cf222e')}
    <h2>Last ${snapshot.rejected.length} rejected items</h2>
    ${
      rows.length === 0
        ? html`<p>None.</p>`
        : html`<table>
            <thead><tr><th>time (UTC)</th><th>site</th><th>item</th><th>reason</th><th>why</th></tr></thead>
            <tbody>${rows}</tbody>
          </table>`
    }
    <h2>Last ${snapshot.deadLetters.length} dead letters</h2>
    <p>Accepted, then refused by the platform, or held because their call may or may not have been applied (<code>ambiguous</code>): <code>cdp-edge outbox list</code>, <code>retry</code> and <code>drop</code> act on them.</p>
    ${
      snapshot.deadLetters.length === 0
        ? html`<p>None.</p>`
        : html`<table>
            <thead><tr><th>time (UTC)</th><th>site</th><th>item</th><th>reason</th></tr></thead>
            <tbody>${snapshot.deadLetters.map(
              (letter) =>
                html`<tr><td>${new Date(letter.at).toISOString().slice(11, 19)}</td><td>${letter.site}</td><td><code>${letter.id}</code></td><td>${letter.reason}</td></tr>`,
            )}</tbody>
          </table>`
    }
  </body>
</html>`;
  return Promise.resolve(page).then(String);
}

const STYLE = `body { font: 14px/1.4 system-ui, sans-serif; margin: 2rem; color: #1f2328; }
figure { margin: 1rem 0; } figcaption { margin-bottom: .25rem; }
table { border-collapse: collapse; } td, th { border-bottom: 1px solid #d0d7de; padding: .25rem .5rem; text-align: left; vertical-align: top; }`;
