// `cdp-edge outbox list|retry|drop --relay URL --token T` against a running Node relay over real
// HTTP (its admin endpoints, served from its SQLite outbox), and the endpoints themselves: an
// admin-scoped token only, the documented error shape for bad input, a failing store seen and logged.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import type { LogLine } from '../../src/relay/core/logging.js';
import { createToken } from '../../src/relay/core/tokens.js';
import { type RunningRelay, startRelay } from '../../src/relay/node.js';
import { createMemoryOutbox } from '../../src/relay/state/memory-outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { cli, seed } from './outbox-support.js';

let relay: RunningRelay;
let admin: string;
let reader: string;
let seqs: number[];

beforeAll(async () => {
  const path = join(mkdtempSync(join(tmpdir(), 'cdp-cli-outbox-relay-')), 'relay-state.db');
  const seeded = await createSqliteOutbox(path);
  seqs = await seed(seeded);
  await seeded.close();
  const ops = await createToken({ name: 'ops', scopes: ['admin'] });
  const crm = await createToken({ name: 'crm', scopes: ['read', 'write'] });
  [admin, reader] = [ops.token, crm.token];
  relay = await startRelay({
    port: 0,
    stateFile: path,
    // No deliverer: what `retry` puts back stays pending, where the test can see it.
    deliver: false,
    env: { CDP_API_KEY: 'outbox-relay-key', CDP_BASE_URL: 'http://127.0.0.1:9', RELAY_LOG: 'off', RELAY_TOKENS: JSON.stringify([ops.entry, crm.entry]) },
  });
});
afterAll(() => relay?.close());

const admitted = (...argv: string[]) => cli(...argv, '--relay', relay.url, '--token', admin);

describe('cdp-edge outbox --relay URL --token T', () => {
  it('lists, retries and drops a deployed relay’s dead letters, as on its state file', async () => {
    const [a1, b1, a2] = seqs;
    const listed = await admitted('list');
    expect(listed.code, listed.err).toBe(0);
    expect(listed.out.split('\n').map((line) => line.split(/\s+/).slice(0, 5))).toEqual([
      ['SEQ', 'SITE', 'ID', 'KIND', 'REASON'],
      [String(a1), 'shop', 'a1', 'activity', 'invalid_field'],
      [String(b1), 'blog', 'b1', 'merge', 'ambiguous'],
      [String(a2), 'shop', 'a2', 'activity', 'unknown_activity'],
    ]);
    expect(JSON.parse((await admitted('list', '--json', '--site', 'shop', '--limit', '1')).out)).toMatchObject([{ seq: a1, id: 'a1', status: 400 }]);

    expect(await admitted('retry', String(a1), '999')).toMatchObject({ code: 0, out: 'retried 1 dead letter (1 not found)' });
    expect(await relay.outbox.stats()).toMatchObject({ pending: 2, dead: 2 });
    expect(await admitted('drop', '--all')).toMatchObject({ code: 0, out: 'dropped 2 dead letters' });
    expect(await relay.outbox.stats()).toMatchObject({ pending: 2, dead: 0 });
    expect(await admitted('list')).toMatchObject({ code: 0, out: 'no dead letters' });
  });

  it('refuses a token without the admin scope, a wrong token and a missing one, changing nothing', async () => {
    const before = await relay.outbox.stats();
    const forbidden = await cli('drop', '--all', '--relay', relay.url, '--token', reader);
    expect(forbidden).toMatchObject({ code: 1, err: expect.stringMatching(/answered 403 \(forbidden: token "crm" lacks the admin scope/) });
    const wrong = await cli('list', '--relay', relay.url, '--token', 'rt_not-a-token');
    expect(wrong).toMatchObject({ code: 1, err: expect.stringMatching(/answered 401 \(invalid_token/) });
    expect(await cli('list', '--relay', relay.url)).toMatchObject({ code: 2, err: expect.stringMatching(/--relay needs a token with the admin scope/) });
    expect(await cli('list', '--token', admin)).toMatchObject({ code: 2, err: expect.stringMatching(/--token goes with --relay/) });
    expect(await relay.outbox.stats()).toEqual(before);
  });
});

describe('the admin endpoints', () => {
  const call = (path: string, init: RequestInit = {}, token = admin) =>
    fetch(`${relay.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });

  it('answer bad input 400 with the documented error body', async () => {
    for (const body of ['not json', '{"seqs":[]}', '{"seqs":[0]}', '{"seqs":[1.5]}', '{"all":false}', '{"seqs":[1],"all":true}', '[]']) {
      const response = await call('/admin/outbox/retry', { method: 'POST', body });
      expect(response.status, body).toBe(400);
      expect(await response.json(), body).toMatchObject({ error: { code: 'invalid_request', message: expect.any(String), details: [] } });
    }
    const limit = await call('/admin/outbox/dead-letters?limit=ten');
    expect(limit.status).toBe(400);
    expect(((await limit.json()) as { error: { message: string } }).error.message).toMatch(/limit must be a whole number/);
    const stranger = await call('/admin/outbox/everything', { method: 'DELETE' });
    expect(stranger.status).toBe(404);
  });

  it('serve the outbox counts; a store that fails is answered 503, logged with its cause, and the next call works', async () => {
    expect(await (await call('/admin/outbox/stats')).json()).toEqual(await relay.outbox.stats());
    const outbox = createMemoryOutbox();
    let failing = true;
    const flaky = {
      ...outbox,
      deadLetters: (options?: { site?: string; limit?: number }) =>
        failing ? Promise.reject(new Error('disk I/O error at /var/lib/relay')) : outbox.deadLetters(options),
    };
    const lines: LogLine[] = [];
    const { token, entry } = await createToken({ name: 'ops', scopes: ['admin'] });
    const config = parseConfig({ CDP_API_KEY: 'k', RELAY_TOKENS: JSON.stringify([entry]), RELAY_LOG: 'off' });
    const handlers = createRelayHandlers(config, { outbox: flaky, deliver: false, logger: (line) => lines.push(line) });
    const list = () => handlers.app.request('/admin/outbox/dead-letters', { headers: { authorization: `Bearer ${token}` } });
    const failed = await list();
    expect(failed.status).toBe(503);
    expect(failed.headers.get('retry-after')).toBe('5');
    expect(await failed.json()).toMatchObject({ error: { code: 'relay_unavailable' } });
    expect(lines.find((line) => line.kind === 'error')).toMatchObject({
      path: '/admin/outbox/dead-letters',
      cause: { message: expect.stringContaining('disk I/O error') },
    });
    failing = false;
    expect(await (await list()).json()).toEqual({ dead_letters: [] });
  });
});
