// Dedupe state that scales out on Workers: a site's ids are spread over shard objects by their own
// hash, a /collect costs one claim and one settle per shard its items touch, no object sees much
// more than its share, and exactly-once holds per site: for retries, other tabs, other queue ids
// and server calls.
import { createExecutionContext, env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { countersName, DEFAULT_SHARDS, shardName } from '../../src/relay/workers/state.js';
import { ORIGIN, sites } from '../relay/suite/target.js';

const VISITORS = 500;

function post(vars: Record<string, unknown>, body: unknown, ip: string) {
  const request = new Request('https://relay.example.com/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': ip },
    body: JSON.stringify(body),
  });
  return worker.fetch(request, { ...env, ...vars } as never, createExecutionContext());
}

const track = (visitor: number) => ({
  id: crypto.randomUUID(),
  type: 'track',
  ts: new Date().toISOString(),
  activity_id: 'act:cm:viewed',
  person: { 'str::email': `visitor-${visitor}@example.com` },
});

async function usage(site: string, shards = DEFAULT_SHARDS): Promise<{ calls: number; rows: number }[]> {
  const namespace = env['RELAY_STATE'] as { idFromName(name: string): unknown; get(id: unknown): { usage(): Promise<{ calls: number; rows: number }> } };
  const names = [...Array.from({ length: shards }, (_, n) => shardName(site, n)), countersName(site)];
  return Promise.all(names.map((name) => namespace.get(namespace.idFromName(name)).usage()));
}

describe('sharded dedupe state', () => {
  it(`spreads ${VISITORS} visitors over the shards: a claim and a settle per shard an item touches, the busiest object under 1/8 of the calls`, async () => {
    const site = `pk_shards_${crypto.randomUUID().slice(0, 8)}`;
    const vars = { RELAY_SITES: sites({ key: site, origins: [ORIGIN] }) };
    const batches = Array.from({ length: VISITORS }, (_, v) => ({ queue: crypto.randomUUID(), batch: [track(v), track(v)] }));
    for (let start = 0; start < VISITORS; start += 25) {
      const answers = await Promise.all(
        batches.slice(start, start + 25).map(async ({ queue, batch }, i) => {
          const response = await post(vars, { key: site, queue, batch }, `198.51.100.${(start + i) % 250}`);
          return ((await response.json()) as { results: { status: string }[] }).results.map((r) => r.status);
        }),
      );
      expect(answers.flat().every((status) => status === 'accepted')).toBe(true);
    }
    const objects = await usage(site);
    const calls = objects.map((object) => object.calls);
    const total = calls.reduce((sum, n) => sum + n, 0);
    const busiest = Math.max(...calls);
    console.log(
      `shards: ${VISITORS} /collect → ${total} object calls (${total / VISITORS} per /collect); busiest object ${busiest} (${Math.round((busiest / total) * 1000) / 10}%); per shard ${calls.join(' ')}`,
    );
    // Two items a visitor: at most two shards, each one claim and one settle.
    expect(total / VISITORS).toBeLessThanOrEqual(4);
    expect(busiest).toBeLessThanOrEqual(total / 8);
    expect(objects.reduce((sum, object) => sum + object.rows, 0)).toBe(VISITORS * 2);

    // Retries from the same queue (another tab, a beacon) meet the same shard: all duplicates.
    const again = await Promise.all(
      batches.slice(0, 50).map(async ({ queue, batch }) => {
        const response = await post(vars, { key: site, queue, batch }, '198.51.100.1');
        return ((await response.json()) as { results: { status: string }[] }).results.map((r) => r.status);
      }),
    );
    expect(again.flat().every((status) => status === 'duplicate')).toBe(true);

    // The same items under another queue id (a second browser profile's copy, a server): still duplicates.
    const elsewhere = await Promise.all(
      batches.slice(50, 100).map(async ({ batch }) => {
        const response = await post(vars, { key: site, queue: crypto.randomUUID(), batch }, '198.51.100.2');
        return ((await response.json()) as { results: { status: string }[] }).results.map((r) => r.status);
      }),
    );
    expect(elsewhere.flat().every((status) => status === 'duplicate')).toBe(true);
    // 500 /collect through workerd, each to the loopback platform in the runner's process: about
    // 20 s on a busy 2-core machine alone, and more beside the rest of the suite. Nothing here is timed.
  }, 180_000);

  it('routes a server call without a queue id by each item id, and still never forwards an id twice', async () => {
    const site = `pk_shards_${crypto.randomUUID().slice(0, 8)}`;
    const vars = { RELAY_SITES: sites({ key: site, origins: [ORIGIN] }) };
    const batch = Array.from({ length: 20 }, (_, n) => track(9000 + n));
    const first = await post(vars, { key: site, batch }, '198.51.100.200');
    expect(((await first.json()) as { results: { status: string }[] }).results.every((r) => r.status === 'accepted')).toBe(true);
    const second = await post(vars, { key: site, batch }, '198.51.100.200');
    expect(((await second.json()) as { results: { status: string }[] }).results.every((r) => r.status === 'duplicate')).toBe(true);
    const rows = (await usage(site)).map((object) => object.rows);
    // Twenty ids over sixteen shards land in several of them.
    expect(rows.filter((n) => n > 0).length).toBeGreaterThan(4);
  });

  it('honours RELAY_SHARDS: with 4, every id lives in one of the first 4 shard objects', async () => {
    const site = `pk_shards_${crypto.randomUUID().slice(0, 8)}`;
    const vars = { RELAY_SITES: sites({ key: site, origins: [ORIGIN] }), RELAY_SHARDS: '4' };
    await Promise.all(
      Array.from({ length: 40 }, async (_, v) => {
        const response = await post(vars, { key: site, queue: crypto.randomUUID(), batch: [track(v)] }, `198.51.100.${v}`);
        expect(response.status).toBe(200);
      }),
    );
    const rows = (await usage(site)).map((object) => object.rows);
    expect(rows.slice(0, 4).reduce((sum, n) => sum + n, 0)).toBe(40);
    expect(rows.slice(0, 4).every((n) => n > 0)).toBe(true);
    expect(rows.slice(4).every((n) => n === 0)).toBe(true);
  });
});
