/**
 * cdp-edge/server's tracker against a real relay (SQLite state file, its own HTTP port) and the
 * emulator behind it over real HTTP: a webhook retried five times (from two instances) lands once;
 * a relay down for several of the tracker's longest backoffs loses nothing once `flush()` resolves;
 * a spool keeps what a process that ended, or was killed, could not send, and the next process
 * sends it, once.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../../src/relay/core/logging.js';
import { createToken } from '../../src/relay/core/tokens.js';
import { type RunningRelay, startRelay } from '../../src/relay/node.js';
import { createServerTracker, type ServerTrackerError } from '../../src/server/index.js';
import { sqliteSpool } from '../../src/server/spool.js';
import { upstreamControl, type UpstreamControl } from '../relay/support/control.js';
import { startUpstreamStack, UPSTREAM_KEY, type UpstreamStack } from '../relay/support/stack.js';

const TSX = pathToFileURL(join(import.meta.dirname, '..', '..', 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const CHILD = join(import.meta.dirname, 'support', 'crash-child.ts');

/** How long the relay is down in the outage case: five of the tracker's longest backoffs (its maxBackoffMs there), so it tries again and again meanwhile. */
const OUTAGE_MS = 5_000;

let stack: UpstreamStack;
let upstream: UpstreamControl;
let dir: string;
let token: string;
let tokens: string;
const relays: RunningRelay[] = [];

/** A relay with its state in `file`, on `port` (0: any free one). */
const startOn = async (port: number, file = join(dir, 'relay.db')): Promise<RunningRelay> => {
  const relay = await startRelay({
    port,
    logger: silentLogger,
    stateFile: file,
    env: { CDP_API_KEY: UPSTREAM_KEY, CDP_BASE_URL: stack.url, RELAY_SITES: '[]', RELAY_TOKENS: tokens, RELAY_DELIVERY_WAIT_MS: '0' },
  });
  relays.push(relay);
  return relay;
};
const stop = async (relay: RunningRelay) => {
  relays.splice(relays.indexOf(relay), 1);
  await relay.close();
};

/** The activities the platform took for `email`, as `activity_id` per call entry. */
const landed = async (email: string) =>
  (await upstream.received())
    .filter((call) => call.path === '/v1/activities/create' && call.status === 200)
    .flatMap((call) => call.body.activities as { activity_id: string; fields?: Record<string, unknown> }[])
    .filter((activity) => activity.fields?.['str::email'] === email);

beforeAll(async () => {
  stack = await startUpstreamStack();
  upstream = upstreamControl(stack.url);
  const made = await createToken({ name: 'shop', scopes: ['collect'] });
  token = made.token;
  tokens = JSON.stringify([made.entry]);
});
beforeEach(async () => {
  await upstream.reset();
  dir = mkdtempSync(join(tmpdir(), 'cdp-server-'));
  return async () => {
    for (const relay of relays.splice(0)) await relay.close();
    rmSync(dir, { recursive: true, force: true });
  };
});
afterAll(async () => {
  await stack?.close();
});

describe('createServerTracker against a real relay', () => {
  it('lands a webhook retried five times, by two instances, once', async () => {
    const relay = await startOn(0);
    const instances = [createServerTracker({ relay: relay.url, token }), createServerTracker({ relay: relay.url, token })];
    const webhook = { id: 'evt_1PaidOrder42', email: 'buyer@example.com' };
    // The platform sends the same event five times; whichever instance takes it tracks it under the event's id.
    const handle = (attempt: number) =>
      instances[attempt % 2]!.track({ id: webhook.id, activity_id: 'act:cm:viewed', person: { 'str::email': webhook.email } });
    const first = await handle(0);
    const rest = await Promise.all([handle(1), handle(2), handle(3), handle(4)]);
    expect(first.status).toBe('accepted');
    expect(rest.map((result) => result.status)).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate']);
    await relay.drained({ timeoutMs: 10_000 });
    expect(await landed(webhook.email)).toHaveLength(1);
  });

  it('identifies a person with proof of nothing but its token: the whole identify goes (tags, fields)', async () => {
    const relay = await startOn(0);
    const cdp = createServerTracker({ relay: relay.url, token });
    const result = await cdp.identify({ id: 'crm-sync-7', fields: { 'str::email': 'vip@example.com', 'str::first': 'Vera' }, tags: ['vip'] });
    expect(result).toEqual({ id: 'crm-sync-7', status: 'accepted' });
    await relay.drained({ timeoutMs: 10_000 });
    const merged = (await upstream.received()).filter((call) => call.path === '/v1/person/merge' && call.status === 200);
    expect(merged.flatMap((call) => call.body.people)).toEqual([
      expect.objectContaining({ fields: { 'str::email': 'vip@example.com', 'str::first': 'Vera' }, tags: ['vip'] }),
    ]);
  });

  it(`loses nothing while the relay is down for ${OUTAGE_MS / 1000} s: every item lands once after flush()`, { timeout: 60_000 }, async () => {
    let relay = await startOn(0);
    const port = relay.port;
    const errors: ServerTrackerError[] = [];
    const cdp = createServerTracker({ relay: relay.url, token, maxBackoffMs: OUTAGE_MS / 5, onError: (error) => errors.push(error) });
    const email = 'outage@example.com';
    const track = (n: number) => cdp.track({ id: `order-${n}`, activity_id: 'act:cm:viewed', person: { 'str::email': email } });
    expect((await track(0)).status).toBe('accepted');
    await stop(relay);
    const down = Date.now();
    // Tracked while the relay is down, one of them again (a retried webhook), and order-0 once more.
    const during = [1, 2, 3, 2, 0].map(track);
    await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
    expect(cdp.pending).toBe(4);
    relay = await startOn(port);
    await cdp.flush();
    expect(Date.now() - down).toBeGreaterThanOrEqual(OUTAGE_MS);
    expect(cdp.pending).toBe(0);
    expect((await Promise.all(during)).map((result) => result.status)).toEqual(['accepted', 'accepted', 'accepted', 'accepted', 'duplicate']);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]?.message).toMatch(/could not be reached/);
    await relay.drained({ timeoutMs: 10_000 });
    const ids = (await landed(email)).length;
    expect(ids).toBe(4);
  });

  it('keeps what an ended process could not send in its spool; the next process sends it once', async () => {
    let relay = await startOn(0);
    const port = relay.port;
    await stop(relay);
    const file = join(dir, 'spool.db');
    const email = 'spooled@example.com';
    const first = sqliteSpool(file);
    const ended = createServerTracker({ relay: `http://127.0.0.1:${port}`, token, spool: first, maxBackoffMs: 200 });
    void ended.track({ id: 'refund-1', activity_id: 'act:cm:viewed', person: { 'str::email': email } });
    void ended.identify({ id: 'refund-1-person', fields: { 'str::email': email, 'str::first': 'Sam' } });
    await expect(ended.flush({ timeoutMs: 500 })).rejects.toMatchObject({ pending: 2 });
    // The function ends: its tracker with it (a flush still waiting hears so).
    const waiting = ended.flush();
    ended.close();
    await expect(waiting).rejects.toMatchObject({ pending: 2 });
    await first.close();

    relay = await startOn(port);
    const spool = sqliteSpool(file);
    const next = createServerTracker({ relay: relay.url, token, spool });
    await next.flush();
    expect(await spool.load()).toEqual([]);
    await spool.close();
    await relay.drained({ timeoutMs: 10_000 });
    expect(await landed(email)).toHaveLength(1);
    const merged = (await upstream.received()).filter((call) => call.path === '/v1/person/merge' && call.status === 200);
    expect(merged.flatMap((call) => call.body.people).filter((person) => person.fields['str::email'] === email)).toHaveLength(1);
  });

  it('a spool given an unknown RELAY_SQLITE_DRIVER: the tracker says so, naming the variable, and still sends what it tracked, once', async () => {
    const relay = await startOn(0);
    vi.stubEnv('RELAY_SQLITE_DRIVER', 'sqlite3');
    try {
      const errors: ServerTrackerError[] = [];
      const spool = sqliteSpool(join(dir, 'misconfigured.db'));
      const cdp = createServerTracker({ relay: relay.url, token, spool, onError: (error) => errors.push(error) });
      const email = 'unspooled@example.com';
      expect((await cdp.track({ id: 'unspooled-1', activity_id: 'act:cm:viewed', person: { 'str::email': email } })).status).toBe('accepted');
      await cdp.flush();
      expect(cdp.pending).toBe(0);
      expect(errors.map((error) => String((error.cause as Error | undefined)?.message))).toContainEqual(expect.stringMatching(/RELAY_SQLITE_DRIVER/));
      await expect(spool.load()).rejects.toThrow(/RELAY_SQLITE_DRIVER/);
      await relay.drained({ timeoutMs: 10_000 });
      expect(await landed(email)).toHaveLength(1);
      cdp.close();
      await spool.close();
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('keeps what a killed process (SIGKILL) had tracked in its spool; the next process sends it once', async () => {
    let relay = await startOn(0);
    const port = relay.port;
    await stop(relay);
    const file = join(dir, 'crash.db');
    const email = 'killed@example.com';
    const child = spawn(process.execPath, ['--import', TSX, CHILD, `http://127.0.0.1:${port}`, token, file, email], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('stored') && resolve());
      child.once('exit', (code) => reject(new Error(`the child exited (${code}) before it stored its items`)));
    });
    child.kill('SIGKILL');
    await exited;

    relay = await startOn(port);
    const spool = sqliteSpool(file);
    expect(await spool.load()).toHaveLength(3);
    const next = createServerTracker({ relay: relay.url, token, spool });
    await next.flush();
    expect(await spool.load()).toEqual([]);
    await spool.close();
    await relay.drained({ timeoutMs: 10_000 });
    expect(await landed(email)).toHaveLength(3);
  });

  it('rejects what the relay never takes, and resolves with why', async () => {
    const relay = await startOn(0);
    const cdp = createServerTracker({ relay: relay.url, token });
    const result = await cdp.track({ id: 'bad-1', activity_id: 'not an activity', person: { 'str::email': 'x@example.com' } });
    expect(result).toMatchObject({ id: 'bad-1', status: 'rejected', reason: 'invalid' });
    expect(() => cdp.track({ id: '', activity_id: 'act:cm:viewed', person: {} })).toThrow(TypeError);
    expect(() => cdp.identify({ fields: { 'str::email': 'x@example.com' }, ts: 'yesterday' })).toThrow(/ts must be/);
    expect(cdp.pending).toBe(0);
  });

  it('keeps the items of a token the relay refuses (401) and says why, until its owner fixes it', async () => {
    const relay = await startOn(0);
    const errors: ServerTrackerError[] = [];
    const cdp = createServerTracker({ relay: relay.url, token: 'rt_revoked', maxBackoffMs: 100, onError: (error) => errors.push(error) });
    void cdp.track({ id: 'kept-1', activity_id: 'act:cm:viewed', person: { 'str::email': 'kept@example.com' } });
    await expect(cdp.flush({ timeoutMs: 500 })).rejects.toMatchObject({ pending: 1 });
    expect(errors[0]).toMatchObject({ status: 401, message: expect.stringMatching(/invalid_token/) });
    cdp.close();
  });
});
