// RELAY_PLAN on the Node relay: the plan file supplies the site's allowlists and attribute types;
// a wrong-typed, unknown or missing attribute rejects that item only, over real HTTP to the emulator.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/relay/core/config.js';
import { createClient } from '../../src/client/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/node.js';
import { emptyLock, pushPlan, type Plan } from '../../src/plan/index.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';

const ORIGIN = 'https://shop.example.com';
const PLAN: Plan = {
  activities: [
    {
      id: 'act:cm:signed-up',
      name: 'signed-up',
      attributes: [
        { name: 'plan', type: 'single_select', values: ['free', 'pro'], required: true },
        { name: 'seats', type: 'integer' },
      ],
    },
    { id: 'act:cm:page-view', name: 'page-view', attributes: [{ name: 'path', type: 'text' }] },
  ],
  sites: [{ key: 'pk_plan', activities: ['act:cm:signed-up'], fields: ['str::email'] }],
};
const SITES = JSON.stringify([{ key: 'pk_plan', origins: [ORIGIN], verify: 'open' }]);

let dir: string;
let emulator: RunningEmulator;
const relays: RunningRelay[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cdp-edge-relay-plan-'));
  writeFileSync(join(dir, 'cdp-edge.plan.json'), JSON.stringify(PLAN));
  emulator = await startEmulator({ port: 0, key: 'relay-plan-key' });
  await pushPlan(PLAN, { client: createClient({ apiKey: 'relay-plan-key', baseUrl: emulator.url }), target: emulator.url, lock: emptyLock(), write: true });
});
afterAll(async () => {
  for (const relay of relays) await relay.close();
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
});

async function relayWith(env: Record<string, string>): Promise<RunningRelay> {
  const relay = await startRelay({ port: 0, logger: () => {}, env: { CDP_API_KEY: 'relay-plan-key', CDP_BASE_URL: emulator.url, RELAY_SITES: SITES, ...env } });
  relays.push(relay);
  return relay;
}

let sequence = 0;
const track = (activity_id: string, attributes: Record<string, unknown>) => ({
  id: `item-${++sequence}`,
  type: 'track',
  ts: new Date().toISOString(),
  activity_id,
  attributes,
  person: { 'str::email': 'ann@example.com' },
});

async function collect(relay: RunningRelay, batch: unknown[]): Promise<Array<{ id: string; status: string; error?: string }>> {
  const response = await fetch(`${relay.url}/collect`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: ORIGIN },
    body: JSON.stringify({ key: 'pk_plan', sent_at: new Date().toISOString(), batch }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { results: Array<{ id: string; status: string; error?: string }> }).results;
}

describe('RELAY_PLAN', () => {
  it('rejects a wrong-typed, unknown or missing attribute per item, naming the attribute, and forwards the rest', async () => {
    const relay = await relayWith({ RELAY_PLAN: join(dir, 'cdp-edge.plan.json') });
    const good = track('act:cm:signed-up', { 'str:cm:plan': 'pro', 'int:cm:seats': 3 });
    const results = await collect(relay, [
      good,
      track('act:cm:signed-up', { 'str:cm:plan': 'pro', 'int:cm:seats': 'three' }),
      track('act:cm:signed-up', { 'str:cm:plan': 'pro', 'int:cm:seats': 2.5 }),
      track('act:cm:signed-up', { 'str:cm:plan': 'platinum' }),
      track('act:cm:signed-up', { 'str:cm:plan': 'pro', 'str:cm:coupon': 'WELCOME' }),
      track('act:cm:signed-up', { 'int:cm:seats': 1 }),
      track('act:cm:page-view', { 'str:cm:path': '/' }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['accepted', 'rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
    expect(results[1]!.error).toBe('attribute int:cm:seats (integer): expected an integer, got a string');
    expect(results[2]!.error).toBe('attribute int:cm:seats (integer): expected an integer, got a fraction');
    expect(results[3]!.error).toBe('attribute str:cm:plan (single_select): the value is not one of free, pro');
    expect(results[4]!.error).toMatch(/^attribute str:cm:coupon is not defined for act:cm:signed-up in the tracking plan/);
    expect(results[5]!.error).toBe('attribute str:cm:plan is required by the tracking plan for act:cm:signed-up');
    // the plan's site list replaces RELAY_SITES' (which allowed any activity)
    expect(results[6]!.error).toMatch(/activity act:cm:page-view may not be sent/);
    await relay.drained();
    const arrived = emulator.emulator.snapshot().recent_events.filter((event) => event.activity_id === 'act:cm:signed-up');
    expect(arrived).toHaveLength(1);
  });

  it('refuses a person field the plan does not allow for the site', async () => {
    const relay = await relayWith({ RELAY_PLAN: join(dir, 'cdp-edge.plan.json') });
    const [result] = await collect(relay, [
      { id: `item-${++sequence}`, type: 'identify', ts: new Date().toISOString(), fields: { 'str::email': 'ann@example.com', 'str::first': 'Ann' } },
    ]);
    expect(result!.status).toBe('rejected');
    expect(result!.error).toMatch(/field str::first may not be sent/);
  });

  it('without RELAY_PLAN, RELAY_SITES alone decides, as before', async () => {
    const relay = await relayWith({});
    const results = await collect(relay, [
      track('act:cm:signed-up', { 'str:cm:plan': 'pro', 'int:cm:seats': 2.5 }),
      track('act:cm:page-view', { 'str:cm:path': '/' }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['accepted', 'accepted']);
  });

  it('takes the plan as JSON (a Worker var, parsed or not) and names RELAY_PLAN in every configuration error', async () => {
    const env = { CDP_API_KEY: 'k', RELAY_SITES: SITES };
    for (const plan of [PLAN, JSON.stringify(PLAN)]) {
      const site = parseConfig({ ...env, RELAY_PLAN: plan }).sites.get('pk_plan')!;
      expect([...site.activities!]).toEqual(['act:cm:signed-up']);
      expect(site.attributeRules?.get('act:cm:signed-up')?.get('int:cm:seats')?.type).toBe('integer');
    }
    expect(() => parseConfig({ ...env, RELAY_PLAN: '{"activities": 1}' })).toThrow(
      /^RELAY_PLAN: is not a valid tracking plan:\n {2}activities: must be an array/,
    );
    expect(() => parseConfig({ ...env, RELAY_PLAN: 'plan.json' })).toThrow(/^RELAY_PLAN: must be the plan's JSON here/);
    await expect(() => startRelay({ port: 0, env: { ...env, RELAY_PLAN: join(dir, 'missing.json') } })).rejects.toThrow(
      /^RELAY_PLAN: cannot read the tracking plan .*missing\.json: ENOENT/,
    );
  });
});
