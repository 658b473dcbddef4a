/**
 * The proxy through the deployed Worker entry (src/relay/cloudflare.ts) inside workerd:
 * RELAY_TOKENS from the Worker's vars, the platform (the emulator behind the recording test
 * upstream) reached over real HTTP, and the typed client as the calling server's code.
 */
import { createExecutionContext, env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient, HTTPError } from '../../src/client/index.js';
import worker from '../../src/relay/cloudflare.js';
import { createToken } from '../../src/relay/core/tokens.js';
import { upstreamControl } from '../relay/support/control.js';
import { API_KEY } from '../relay/suite/target.js';

const upstream = upstreamControl(env['TEST_UPSTREAM'] as string);
const tokens = { read: '', write: '' };
let vars: Record<string, unknown>;

const send = (path: string, init: RequestInit = {}) =>
  worker.fetch(new Request(`https://relay.example.com${path}`, init), vars as never, createExecutionContext());
const clientWith = (token: string) =>
  createClient({
    baseUrl: 'https://relay.example.com',
    token,
    fetch: async (input, init) => worker.fetch(new Request(input, init), vars as never, createExecutionContext()),
  });

describe('the proxy through the Worker entry', () => {
  beforeAll(async () => {
    const read = await createToken({ name: 'worker-reader', scopes: ['read'] });
    const write = await createToken({ name: 'worker-writer', scopes: ['write'] });
    tokens.read = read.token;
    tokens.write = write.token;
    // One env object per Worker instance: RELAY_TOKENS is parsed once, as in production.
    vars = { ...env, CDP_BASE_URL: env['TEST_UPSTREAM'], RELAY_TOKENS: JSON.stringify([read.entry, write.entry]) };
  });

  it('forwards a read with the platform key in place of the bearer token and cookies', async () => {
    await upstream.reset();
    const response = await send('/v1/tags/get', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.read}`,
        cookie: 'session=worker-cookie',
        'content-type': 'application/json',
        'x-forwarded-for': '198.51.100.7',
      },
      body: '{}',
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const calls = (await upstream.received()).filter((call) => call.path.startsWith('/v1/'));
    expect(calls.map((call) => `${call.method} ${call.path}`)).toEqual(['POST /v1/tags/get']);
    const headers = calls[0]!.headers;
    expect(headers['x-api-key']).toBe(API_KEY);
    expect(headers['authorization']).toBeUndefined();
    expect(headers['cookie']).toBeUndefined();
    expect(JSON.stringify(headers)).not.toContain(tokens.read);
    expect(JSON.stringify(headers)).not.toContain('198.51.100.7');
  });

  it('refuses without a token (401), a missing scope (403) and unknown paths (404), calling nothing', async () => {
    await upstream.reset();
    expect((await send('/v1/person/get', { method: 'POST', body: '{}' })).status).toBe(401);
    expect(
      (
        await send('/v1/person/delete', {
          method: 'DELETE',
          headers: { authorization: `Bearer ${tokens.write}` },
          body: '{"inclusion_ids":["00a1b2c3d4e5f60718293a4b"]}',
        })
      ).status,
    ).toBe(403);
    const unknown = await send('/v1/person/get/../../admin', { method: 'POST', headers: { authorization: `Bearer ${tokens.read}` }, body: '{}' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error: { code: 'unknown_endpoint' } });
    expect((await upstream.received()).filter((call) => call.path.startsWith('/v1/'))).toEqual([]);
  });

  it('lets a write token merge with the typed client and a read token page the people back, but not delete them', async () => {
    const writer = clientWith(tokens.write);
    const reader = clientWith(tokens.read);
    const people = Array.from({ length: 120 }, (_, i) => ({ fields: { 'str::email': `worker${i}@example.com` } }));
    const merged = await writer.person.merge({ people });
    expect(merged.people).toHaveLength(120);
    const emails = new Set<string>();
    for await (const person of reader.person.all({ limit: 50, fields: ['str::email'] })) emails.add(String(person.fields?.['str::email']));
    for (const person of people) expect(emails.has(person.fields['str::email'])).toBe(true);
    const refused = await writer.person.delete({ inclusion_ids: [merged.people![0]!.person_id!] }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(HTTPError);
    expect(refused).toMatchObject({ status: 403 });
  });
});
