/**
 * `GET /`: what the emulator holds, refreshing itself every 2 s, so someone running the demo
 * sees their clicks arrive. Built with Hono's `html` tag, which escapes every value it is given.
 * @module
 */
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';
import type { ResolvedOptions } from './options.js';
import type { Store } from './store.js';

type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

const show = (value: unknown): string => (value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value));

function table(title: string, total: number, headers: string[], rows: unknown[][]): Html {
  const head = headers.map((h) => html`<th>${h}</th>`);
  const body =
    rows.length === 0
      ? html`<tr><td colspan="${headers.length}" class="empty">none yet</td></tr>`
      : rows.map((row) => html`<tr>${row.map((cell) => html`<td>${show(cell)}</td>`)}</tr>`);
  return html`<section><h2>${title} <small>${total}</small></h2><table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></section>`;
}

const latest = <T>(items: Iterable<T>, n: number): T[] => [...items].slice(-n).reverse();

const STYLE =
  'body{font:14px system-ui,sans-serif;margin:1.5rem;color:#222}table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}th,td{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top;font-family:ui-monospace,monospace;font-size:12px}th{background:#f4f4f4}small{color:#888;font-weight:normal}.empty{color:#999}';

/** The dashboard page. */
export async function dashboard(store: Store, options: ResolvedOptions): Promise<string> {
  const people = latest(store.people.values(), 50).map((p) => [
    p.id,
    p.fields['str::email'],
    p.fields['str::ei'],
    [p.fields['str::first'], p.fields['str::last']].filter(Boolean).join(' '),
    store.tagNames(p.tags).join(', '),
    p.location?.city_name ?? p.location?.ip?.city_name ?? '',
    p.archived ? 'archived' : 'active',
    p.updated_at,
  ]);
  const accounts = latest(store.accounts.values(), 20).map((a) => [
    a.id,
    a.fields['str:o:name'],
    a.members.size,
    store.tagNames(a.tags).join(', '),
    a.archived ? 'archived' : 'active',
  ]);
  const tags = [...store.tags.values()].map((t) => [t.id, t.name, t.type || 'person', t.last_used]);
  const activities = [...store.activities.values()].map((d) => [d.activity_field_id, d.name, d.state, d.attributes.map((a) => a.field_id).join(', ')]);
  const events = latest(store.recentEvents, 30).map((e) => [e.created, e.activity_id, e.person_id, e.attributes]);
  const page = html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>cdp-edge emulator</title>
<style>${raw(STYLE)}</style>
</head><body>
<h1>cdp-edge emulator</h1>
<p>Region <b>${options.region}</b>, plan <b>${options.plan}</b>, ${store.people.size} people, ${store.accounts.size} accounts, ${store.addressLookups} address lookups. Refreshes every 2 s.</p>
${table('Latest activity events', store.recentEvents.length, ['time', 'activity', 'person', 'attributes'], events)}
${table('People (latest 50)', store.people.size, ['id', 'email', 'external id', 'name', 'tags', 'city', 'state', 'updated'], people)}
${table('Accounts (latest 20)', store.accounts.size, ['id', 'name', 'people', 'tags', 'state'], accounts)}
${table('Tags', store.tags.size, ['id', 'name', 'type', 'last used'], tags)}
${table('Activity definitions', store.activities.size, ['id', 'name', 'state', 'attributes'], activities)}
</body></html>`;
  return String(await page);
}
