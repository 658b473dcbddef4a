/**
 * The relay's door for servers, `POST /server/collect`, tried the way a stranger would: only a
 * relay token with the `collect` scope opens it (none: 401, another scope: 403), an Origin header
 * neither opens it nor earns CORS headers, its items are proven (the server vouches) while the
 * browsers' door still proves nothing for them, and a browser can never send as the door's site.
 * A real emulator and a real relay on loopback, as every attack here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entryProves } from '../../src/relay/core/sites.js';
import { hashToken } from '../../src/relay/core/tokens.js';
import { upstreamControl } from '../relay/support/control.js';
import { KEY, ORIGIN, type Stack, startStack, until } from './support.js';

const TOKENS = { collect: 'rt_security_collect_0123456789', read: 'rt_security_read_0123456789', admin: 'rt_security_admin_0123456789' };
const SITE = 'pk_required';
const EMAIL = 'victim@example.com';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack({
    record: true,
    env: {
      RELAY_IDENTITY_SECRET: 'security-identity-secret-0123456789',
      RELAY_SITES: JSON.stringify([{ key: SITE, origins: [ORIGIN], verify: 'required' }]),
      RELAY_TOKENS: JSON.stringify([
        { name: 'shop', sha256: await hashToken(TOKENS.collect), scopes: ['collect'] },
        { name: 'crm', sha256: await hashToken(TOKENS.read), scopes: ['read', 'write', 'metrics'] },
        { name: 'ops', sha256: await hashToken(TOKENS.admin), scopes: ['admin'] },
      ]),
    },
  });
});
afterAll(() => stack?.close());

const item = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  type: 'identify',
  fields: { 'str::email': EMAIL, 'str::first': 'Mallory' },
  tags: ['owned'],
  ...extra,
});
const door = (body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stack.relay.url}/server/collect`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const errorOf = async (response: Response) => ((await response.json()) as { error: { code: string } }).error.code;

async function person(): Promise<Record<string, unknown> | undefined> {
  const response = await fetch(`${stack.emulator.url}/v1/person/get`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({ person: { 'str::email': EMAIL } }),
  });
  return ((await response.json()) as { contacts?: { fields: Record<string, unknown> }[] }).contacts?.[0]?.fields;
}

describe('POST /server/collect', () => {
  it('answers 401 without a token or with one the relay does not know, before reading the body', async () => {
    const none = await door({ batch: [item('a1')] });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(await errorOf(none)).toBe('missing_token');
    const wrong = await door({ batch: [item('a2')] }, bearer('rt_not_a_token_of_this_relay'));
    expect(wrong.status).toBe(401);
    expect(await errorOf(wrong)).toBe('invalid_token');
    // The browsers' site key is no credential here.
    const keyed = await door({ key: SITE, batch: [item('a3')] }, { origin: ORIGIN });
    expect(keyed.status).toBe(401);
  });

  it('answers 403 to a token without the collect scope (read, write, metrics), and a collect token opens nothing else', async () => {
    const other = await door({ batch: [item('b1')] }, bearer(TOKENS.read));
    expect(other.status).toBe(403);
    expect(await errorOf(other)).toBe('forbidden');
    const proxied = await fetch(`${stack.relay.url}/v1/person/get`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(TOKENS.collect) },
      body: JSON.stringify({ person: { 'str::email': EMAIL } }),
    });
    expect(proxied.status).toBe(403);
    const admin = await door({ batch: [] }, bearer(TOKENS.admin));
    expect(admin.status).toBe(200);
  });

  it('ignores Origin: no origin opens it, none is needed, and no answer carries CORS headers', async () => {
    const allowed = await door({ batch: [] }, { origin: ORIGIN });
    expect(allowed.status).toBe(401);
    expect(allowed.headers.get('access-control-allow-origin')).toBeNull();
    const foreign = await door({ batch: [] }, { origin: 'https://evil.example', ...bearer(TOKENS.collect) });
    expect(foreign.status).toBe(200);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${stack.relay.url}/server/collect`, { method: 'OPTIONS', headers: { origin: ORIGIN } });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('answers bad input with the documented error shape', async () => {
    const notJson = await fetch(`${stack.relay.url}/server/collect`, { method: 'POST', headers: bearer(TOKENS.collect), body: '{' });
    expect([notJson.status, await errorOf(notJson)]).toEqual([400, 'malformed_body']);
    const noBatch = await door({ items: [] }, bearer(TOKENS.collect));
    expect([noBatch.status, await errorOf(noBatch)]).toEqual([400, 'invalid_body']);
    const many = await door({ batch: Array.from({ length: 101 }, (_, i) => item(`m${i}`)) }, bearer(TOKENS.collect));
    expect([many.status, await errorOf(many)]).toEqual([413, 'too_many_items']);
    const type = await fetch(`${stack.relay.url}/server/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/xml', ...bearer(TOKENS.collect) },
      body: '<batch/>',
    });
    expect([type.status, await errorOf(type)]).toEqual([415, 'unsupported_media_type']);
    const get = await fetch(`${stack.relay.url}/server/collect`, { headers: bearer(TOKENS.collect) });
    expect([get.status, await errorOf(get)]).toEqual([405, 'method_not_allowed']);
    const bad = await door({ batch: [{ id: 'x1', type: 'track' }] }, bearer(TOKENS.collect));
    expect(((await bad.json()) as { results: { status: string; reason: string }[] }).results).toEqual([
      expect.objectContaining({ status: 'rejected', reason: 'invalid' }),
    ]);
  });

  it('proves its items and only its own: the browsers cannot write what the server door can', async () => {
    // A browser without proof changes nothing (verify: required)...
    const browser = await fetch(`${stack.relay.url}/collect`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: ORIGIN },
      body: JSON.stringify({ key: SITE, batch: [item('c1')] }),
    });
    expect(((await browser.json()) as { results: { reason: string }[] }).results[0]?.reason).toBe('unverified');
    // ...nor by naming the server door's site as its key, with or without an origin.
    for (const origin of [{ origin: ORIGIN }, {}]) {
      const posing = await fetch(`${stack.relay.url}/collect`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...origin },
        body: JSON.stringify({ key: 'server:shop', batch: [item('c2')] }),
      });
      expect([posing.status, await errorOf(posing)]).toEqual([401, 'unknown_site_key']);
    }
    // The server vouches: the whole identify goes, tags and all, and its own visitor address is kept.
    const server = await door({ batch: [item('c3', { location: { source_ip: '203.0.113.7' } })] }, bearer(TOKENS.collect));
    expect(((await server.json()) as { results: { status: string }[] }).results).toEqual([{ id: 'c3', status: 'accepted' }]);
    await until('the server identify to land', async () => (await person())?.['str::first'] === 'Mallory');
    expect(await person()).toMatchObject({ 'str::email': EMAIL, tags: ['owned'] });
    const merges = (await upstreamControl(stack.recorder!.url).received()).filter((call) => call.path === '/v1/person/merge');
    expect(merges.flatMap((call) => call.body.people)).toEqual([expect.objectContaining({ location: { source_ip: '203.0.113.7' } })]);
  });

  it('delivers the server door entries as proven, whatever their kind; a browser site entry only as its rules say', () => {
    const sites = new Map([[SITE, { verify: 'off' as const }]]) as never;
    for (const kind of ['merge', 'merge-create', 'activity'] as const) expect(entryProves(sites, { site: 'server:shop', kind })).toBe(true);
    expect(entryProves(sites, { site: SITE, kind: 'merge' })).toBe(false);
    expect(entryProves(new Map(), { site: 'server', kind: 'merge' })).toBe(false);
  });
});
