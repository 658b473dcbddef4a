// Capacity kept for proven visitors, over real HTTP through a trusted proxy, on an SQLite state
// file: anonymous identifies and tracks from 150 IPv6 /64 networks, each within its own visitor
// limits, fill their share of the site's outbox while the platform is down. A signed-in visitor
// (a valid user_hash) still has every item accepted, and the people the anonymous identifies
// create once the platform is back stay within the site's budget of new people.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.js';
import { identityHash } from '../../src/relay/ingest/identity.js';
import { type RunningRelay, startRelay } from '../../src/relay/node.js';

const KEY = 'unproven-platform-key';
const SECRET = 'unproven-identity-secret-0123456789';
const ORIGIN = 'https://shop.example.com';
/** The site may hold 400 entries waiting; unproven items half of that; 12 new people a minute (one each 5 s). */
const SITE_MAX = 400;
const PEOPLE_PER_MINUTE = 12;

let platform: RunningEmulator;
let relay: RunningRelay;
let dir: string;
beforeAll(async () => {
  platform = await startEmulator({ port: 0, key: KEY, plan: 'business' });
  const defined = await fetch(`${platform.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({ name: 'viewed', attributes: [] }),
  });
  expect(defined.ok).toBe(true);
  dir = mkdtempSync(join(tmpdir(), 'cdp-unproven-'));
  relay = await startRelay({
    port: 0,
    metricsPort: 0,
    stateFile: join(dir, 'state.db'),
    env: {
      CDP_API_KEY: KEY,
      CDP_BASE_URL: platform.url,
      RELAY_SITES: JSON.stringify([{ key: 'pk_shop', origins: [ORIGIN], verify: 'open' }]),
      RELAY_IDENTITY_SECRET: SECRET,
      RELAY_TRUST_PROXY: '127.0.0.1',
      RELAY_OUTBOX_MAX_PER_SITE: String(SITE_MAX),
      RELAY_UNPROVEN_PEOPLE_PER_MINUTE: String(PEOPLE_PER_MINUTE),
      RELAY_DELIVERY_RETRY_MS: '200',
      RELAY_LOG: 'off',
    },
  });
});
afterAll(async () => {
  await relay?.close();
  await platform?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const post = async (address: string, batch: unknown[]) => {
  const response = await fetch(`${relay.url}/collect`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'x-forwarded-for': address },
    body: JSON.stringify({ key: 'pk_shop', queue: crypto.randomUUID(), batch }),
  });
  return { status: response.status, body: (await response.json()) as { results?: { id: string; status: string; error?: string }[] } };
};
const identify = (email: string, extra: Record<string, unknown> = {}) => ({
  id: crypto.randomUUID(),
  type: 'identify',
  fields: { 'str::email': email },
  ...extra,
});
const track = (email: string) => ({ id: crypto.randomUUID(), type: 'track', activity_id: 'act:cm:viewed', person: { 'str::email': email } });

it('anonymous items from 150 /64 networks fill only their share: a signed-in visitor is still accepted, and new people stay within the budget', async () => {
  const run = crypto.randomUUID().slice(0, 8);
  // The anonymous tracks name one person the platform has already: only identifies may create people.
  const known = `known-${run}@example.com`;
  const merged = await fetch(`${platform.url}/v1/person/merge`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({ merge_by: ['str::email'], merge_strategy: 2, people: [{ fields: { 'str::email': known } }] }),
  });
  expect(merged.ok).toBe(true);
  // The platform is down (nothing applied): what is accepted waits in the outbox.
  platform.emulator.setFaults({ '*': { status: 503 } });
  const started = Date.now();
  const anonymous: string[] = [];
  let acceptedAnonymous = 0;
  for (let round = 0; round < 2; round++) {
    await Promise.all(
      Array.from({ length: 150 }, async (_, n) => {
        // Each network: 3 identifies of fresh emails and 7 tracks, twice; well within its own limits.
        const emails = [0, 1, 2].map((i) => `anon-${run}-${n}-${round}-${i}@example.com`);
        anonymous.push(...emails);
        const { body } = await post(`2001:db8:${n.toString(16)}:${round}::7`, [
          ...emails.map((email) => identify(email)),
          ...Array.from({ length: 7 }, () => track(known)),
        ]);
        acceptedAnonymous += (body.results ?? []).filter((result) => result.status === 'accepted').length;
      }),
    );
  }
  const flooded = Date.now() - started;
  // They filled their share (half the site's outbox) and no more.
  expect(acceptedAnonymous).toBe(SITE_MAX / 2);
  // The budget is spent: a lone anonymous identify is answered 503 people_budget, to send again after Retry-After.
  const lone = await fetch(`${relay.url}/collect`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'x-forwarded-for': '2001:db8:fffe::1' },
    body: JSON.stringify({ key: 'pk_shop', batch: [identify(`lone-${run}@example.com`)] }),
  });
  expect(lone.status).toBe(503);
  expect(Number(lone.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  const refused = (await lone.json()) as { error: { code: string; details: { status: string; error: string }[] } };
  expect(refused.error.code).toBe('people_budget');
  expect(refused.error.details.map((item) => item.status)).toEqual(['retry']);

  // A signed-in visitor: one identify with a valid user_hash, then tracks; every item is accepted.
  const me = `signed-in-${run}@example.com`;
  const proof = await identityHash(SECRET, 'str::email', me);
  const mine = [identify(me, { user_hash: proof }), ...Array.from({ length: 20 }, () => track(me))];
  const answer = await post('2001:db8:ffff::1', mine);
  expect(answer.status).toBe(200);
  expect(answer.body.results!.map((result) => result.status)).toEqual(mine.map(() => 'accepted'));

  // The platform is back: everything accepted is delivered.
  platform.emulator.setFaults({});
  await relay.drained({ timeoutMs: 30_000 });
  const people = [...platform.emulator.state.people.values()];
  const created = people.filter((person) => anonymous.includes(String(person.fields['str::email'])));
  // Anonymous identifies created at most the budget: the minute's 12 at once, then one every 5 s of the flood.
  expect(created.length).toBeGreaterThan(0);
  expect(created.length).toBeLessThanOrEqual(PEOPLE_PER_MINUTE + Math.ceil(flooded / 5_000));
  expect(people.filter((person) => person.fields['str::email'] === me)).toHaveLength(1);
  // Both are counted: the items past the share, the identifies past the budget.
  const scrape = await (await fetch(`${relay.metricsUrl}/metrics`)).text();
  const counted = (limit: string) =>
    Number(scrape.match(new RegExp(`cdp_edge_unproven_held_items_total\\{site="pk_shop",limit="${limit}"\\} (\\d+)`))?.[1] ?? 0);
  expect(counted('outbox_share')).toBeGreaterThan(0);
  expect(counted('people_budget')).toBeGreaterThan(0);
}, 60_000);
