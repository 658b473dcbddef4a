// The admin door of a deployed Worker (what `cdp-edge outbox --relay URL --token T` calls): the
// real entry in workerd, its outbox objects and their alarms, the loopback platform. An entry the
// platform refuses after acceptance is a dead letter with its reason, listed across the objects;
// retry delivers it once, drop removes it, stats count them; only an admin-scoped token gets in.
import { createExecutionContext, env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { createToken } from '../../src/relay/core/tokens.js';
import { createShardedOutbox } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS } from '../../src/relay/workers/state.js';
import { upstreamControl } from '../relay/support/control.js';
import { ORIGIN, siteKey, sites, track } from '../relay/suite/target.js';
import { drained } from './target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
const outbox = createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS);
const key = siteKey('admin');
let vars: Record<string, string>;
let admin: string;
let writer: string;

beforeAll(async () => {
  const ops = await createToken({ name: 'ops', scopes: ['admin'] });
  const crm = await createToken({ name: 'crm', scopes: ['read', 'write'] });
  [admin, writer] = [ops.token, crm.token];
  vars = { RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }), RELAY_TOKENS: JSON.stringify([ops.entry, crm.entry]) };
  await drained(outbox);
  await upstream.reset();
});

const send = (path: string, init: RequestInit = {}) =>
  worker.fetch(new Request(`https://relay.example.com${path}`, init), { ...env, ...vars } as never, createExecutionContext());
const call = (path: string, init: RequestInit = {}, token: string | null = admin) =>
  send(path, { ...init, headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }), ...init.headers } });
const post = (body: unknown) => call('/admin/outbox/retry', { method: 'POST', body: JSON.stringify(body) });

interface Letter {
  seq: number;
  site: string;
  id: string;
  reason: string;
  status: number;
}
const letters = async (): Promise<Letter[]> =>
  ((await (await call(`/admin/outbox/dead-letters?site=${key}`)).json()) as { dead_letters: Letter[] }).dead_letters;

/** Accepts one item of this site (its own browser) and waits until the objects have settled it. */
async function accept(item: ReturnType<typeof track>): Promise<void> {
  const response = await send('/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': '192.0.2.77' },
    body: JSON.stringify({ key, queue: crypto.randomUUID(), batch: [item] }),
  });
  expect(((await response.json()) as { results: { status: string }[] }).results.map((r) => r.status)).toEqual(['accepted']);
  await drained(outbox);
}

/** The platform calls that applied `email`'s activity (2xx). */
const applied = async (email: string) =>
  (await upstream.received()).filter(
    (received) =>
      received.path === '/v1/activities/create' &&
      received.status >= 200 &&
      received.status < 300 &&
      received.body.activities.some((activity: { fields: Record<string, string> }) => activity.fields['str::email'] === email),
  ).length;

describe("the Worker's admin door", () => {
  it('lists a refused entry as a dead letter with its reason, retries it into one delivery, drops another, and counts them', async () => {
    const first = track('act:cm:viewed', { 'str::email': `admin-retry-${crypto.randomUUID().slice(0, 8)}@example.com` });
    const second = track('act:cm:viewed', { 'str::email': `admin-drop-${crypto.randomUUID().slice(0, 8)}@example.com` });
    // Each is refused by the platform as a whole one-entry call: a dead letter, with the platform's words.
    await upstream.faults([{ status: 400, body: { request_id: 'r1', code: 400, error: 'field str::email is refused for now' } }]);
    await accept(first);
    await upstream.faults([{ status: 400, body: { request_id: 'r2', code: 400, error: 'field str::email is refused for now' } }]);
    await accept(second);

    const listed = await letters();
    expect(listed.map(({ id, site, status }) => ({ id, site, status }))).toEqual([
      { id: first.id, site: key, status: 400 },
      { id: second.id, site: key, status: 400 },
    ]);
    expect(listed[0]!.reason).toContain('field str::email is refused for now');
    const before = (await (await call('/admin/outbox/stats')).json()) as { pending: number; dead: number };
    expect(before).toMatchObject({ pending: 0, dead: expect.any(Number) });
    expect(before.dead).toBeGreaterThanOrEqual(2);

    // Retry (the platform takes it now): delivered once, and no longer a dead letter.
    expect(await (await post({ seqs: [listed[0]!.seq] })).json()).toEqual({ retried: 1 });
    await drained(outbox);
    expect(await applied(emailOf(first))).toBe(1);
    expect((await letters()).map((letter) => letter.id)).toEqual([second.id]);
    // Retrying the same seq again finds nothing: no second delivery.
    expect(await (await post({ seqs: [listed[0]!.seq] })).json()).toEqual({ retried: 0 });
    await drained(outbox);
    expect(await applied(emailOf(first))).toBe(1);

    // Drop: gone from the list and the count, never delivered.
    expect(await (await call('/admin/outbox/drop', { method: 'POST', body: JSON.stringify({ seqs: [listed[1]!.seq] }) })).json()).toEqual({ dropped: 1 });
    expect(await letters()).toEqual([]);
    expect(await (await call('/admin/outbox/stats')).json()).toMatchObject({ pending: 0, dead: before.dead - 2 });
    expect(await applied(emailOf(second))).toBe(0);
  });

  it('refuses a token without the admin scope, a wrong token and none, changing nothing', async () => {
    const item = track('act:cm:viewed', { 'str::email': `admin-kept-${crypto.randomUUID().slice(0, 8)}@example.com` });
    await upstream.faults([{ status: 400, body: { request_id: 'r3', code: 400, error: 'refused' } }]);
    await accept(item);
    const [letter] = await letters();
    expect(letter).toMatchObject({ id: item.id });
    const stats = await (await call('/admin/outbox/stats')).json();

    for (const [token, status, code] of [
      [writer, 403, 'forbidden'],
      ['rt_not-a-token', 401, 'invalid_token'],
      [null, 401, 'missing_token'],
    ] as const) {
      for (const [path, init] of [
        ['/admin/outbox/dead-letters', {}],
        ['/admin/outbox/stats', {}],
        ['/admin/outbox/retry', { method: 'POST', body: JSON.stringify({ all: true }) }],
        ['/admin/outbox/drop', { method: 'POST', body: JSON.stringify({ seqs: [letter!.seq] }) }],
      ] as const) {
        const response = await call(path, init, token);
        expect(response.status, `${path} with ${token}`).toBe(status);
        const body = (await response.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe(code);
        expect(JSON.stringify(body)).not.toContain(admin);
      }
    }
    expect((await letters()).map((kept) => kept.id)).toEqual([item.id]);
    expect(await (await call('/admin/outbox/stats')).json()).toEqual(stats);
    // Left as found: the next file starts with no dead letter of this site.
    expect(await (await call('/admin/outbox/drop', { method: 'POST', body: JSON.stringify({ seqs: [letter!.seq] }) })).json()).toEqual({ dropped: 1 });
  });
});

const emailOf = (item: ReturnType<typeof track>) => (item.person as Record<string, string>)['str::email']!;
