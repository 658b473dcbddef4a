// Every log line that carries error text is scrubbed by the logger itself: a stored row the
// deliverer cannot read makes JSON.parse quote the row, and the relay's delivery_failed line
// (written through pino, as `cdp-edge relay` writes) carries the error without the email address
// or the phone number the row held.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'libsql';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { scrubbing } from '../../src/relay/core/logging.js';
import { createPinoLogger, type RunningRelay, startRelay } from '../../src/relay/node.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { startUpstreamStack, UPSTREAM_KEY, type UpstreamStack } from './support/stack.js';

// JSON.parse quotes a short text whole (a longer one by its first 10 characters).
const EMAIL = 'bo@ex.io';
const PHONE = '2079460958';
let stack: UpstreamStack;
let relay: RunningRelay | undefined;
const dir = mkdtempSync(join(tmpdir(), 'cdp-log-scrub-'));
beforeAll(async () => {
  stack = await startUpstreamStack();
});
afterAll(async () => {
  await relay?.close();
  await stack?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Polls `lines` until one matches, for up to 20 s. */
async function lineWith(lines: string[], pattern: RegExp): Promise<string> {
  for (const until = Date.now() + 20_000; Date.now() < until; ) {
    const line = lines.find((text) => pattern.test(text));
    if (line !== undefined) return line;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`no log line matched ${pattern} in:\n${lines.join('')}`);
}

it('a stored outbox row that is not JSON: the delivery_failed line names the error, without the email or phone it quoted', async () => {
  const stateFile = join(dir, 'state.db');
  // A row written by something else than the relay (a hand edit, a bad restore): its text is what
  // a visitor sent. It sits in the outbox as the relay keeps it (its lane, its counts), so the
  // relay leases it as soon as it starts.
  const outbox = await createSqliteOutbox(stateFile);
  const item = { site: 'pk_logs', id: crypto.randomUUID(), kind: 'activity' as const, entry: {}, browser: 'b', visitor: 'v', accepted: Date.now() };
  expect((await outbox.outbox.accept([item], Date.now(), 3600_000)).accepted).toEqual([item.id]);
  await outbox.close();
  const db = new Database(stateFile);
  expect(db.prepare('UPDATE outbox SET item = ?').run(`${EMAIL} ${PHONE}`).changes).toBe(1);
  db.close();
  const lines: string[] = [];
  relay = await startRelay({
    port: 0,
    stateFile,
    logger: createPinoLogger('info', { write: (line: string) => void lines.push(line) }),
    env: { CDP_API_KEY: UPSTREAM_KEY, CDP_BASE_URL: stack.url, RELAY_SITES: JSON.stringify([{ key: 'pk_logs', origins: ['https://shop.example.com'] }]) },
  });
  const line = await lineWith(lines, /delivery_failed/);
  expect(JSON.parse(line)).toMatchObject({ level: 'error', error: 'delivery_failed' });
  // The lease reads the row's fields in SQL (SQLite's "malformed JSON", which quotes nothing); a
  // parse in JavaScript quotes the text, which the scrubber masks ([email], [phone]).
  expect(line).toMatch(/malformed JSON|is not valid JSON/);
  if (/is not valid JSON/.test(line)) {
    expect(line).toContain('[email]');
    expect(line).toContain('[phone]');
  }
  expect(line).not.toContain(EMAIL);
  expect(line).not.toContain(PHONE);
});

it('a logger given to the relay gets lines scrubbed too, whatever their depth', () => {
  const seen: unknown[] = [];
  const logger = scrubbing((line) => void seen.push(line));
  logger({ ts: 't', method: 'POST', path: '/collect', status: 500, ms: 1, cause: { message: `bad ${EMAIL}`, cause: { message: `call ${PHONE}` } } });
  logger({ ts: 't', method: 'POST', path: '/collect', status: 200, ms: 1, upstream: [200], details: ['kept', { error: `to ${EMAIL}` }] });
  expect(JSON.stringify(seen)).not.toContain(EMAIL);
  expect(JSON.stringify(seen)).not.toContain(PHONE);
  expect(seen[1]).toEqual({ ts: 't', method: 'POST', path: '/collect', status: 200, ms: 1, upstream: [200], details: ['kept', { error: 'to [email]' }] });
  expect(scrubbing(logger)).toBe(logger);
});

it('pino writes each line with one level: its own (an item line at debug) or info, the fields as given and scrubbed', () => {
  const written: string[] = [];
  const logger = createPinoLogger('debug', { write: (line: string) => void written.push(line) });
  logger({ ts: 't', kind: 'collect', method: 'POST', path: '/collect', status: 200, ms: 1, site: 'shop', items: 1, results: { rejected: 1 } });
  logger({ level: 'debug', ts: 't', kind: 'item', method: 'POST', path: '/collect', status: 200, ms: 1, id: 'i1', error: `for ${EMAIL}` });
  expect(written.map((line) => line.match(/"level"/g)?.length)).toEqual([1, 1]);
  expect(written.map((line) => JSON.parse(line))).toEqual([
    { level: 'info', ts: 't', kind: 'collect', method: 'POST', path: '/collect', status: 200, ms: 1, site: 'shop', items: 1, results: { rejected: 1 } },
    { level: 'debug', ts: 't', kind: 'item', method: 'POST', path: '/collect', status: 200, ms: 1, id: 'i1', error: 'for [email]' },
  ]);
});
