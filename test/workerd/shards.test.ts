// The outbox objects that scale out on Workers: a browser's items live in the object of its hash,
// each id is routed first (the router object of the id's hash remembers where it went), so a
// /collect costs a router call per router object its ids touch and one outbox call, no object
// sees much more than its share, and exactly-once holds: for retries, other tabs, other queue ids
// and server calls.
import { createExecutionContext, env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import worker from '../../src/relay/cloudflare.js';
import { outboxName, routerName } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS } from '../../src/relay/workers/state.js';
import { ORIGIN, sites } from '../relay/suite/target.js';

// 200 visitors put 584 calls on the 32 objects: the busiest takes about 6% (1/8 is the bound);
// 500 took 4.5% at 2.5 times the CPU, and the share an object takes is what is asserted.
const VISITORS = 200;

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

/** Calls served so far by each outbox object and each router object (the first `objects` of each). */
async function usage(objects = 64): Promise<{ outbox: number[]; router: number[] }> {
  const namespace = env['RELAY_OUTBOX'] as { idFromName(name: string): unknown; get(id: unknown): { usage(): Promise<{ calls: number }> } };
  const calls = (names: string[]) => Promise.all(names.map(async (name) => (await namespace.get(namespace.idFromName(name)).usage()).calls));
  const numbers = Array.from({ length: objects }, (_, n) => n);
  return { outbox: await calls(numbers.map(outboxName)), router: await calls(numbers.map(routerName)) };
}
const since = (before: number[], after: number[]) => after.map((n, i) => n - before[i]!);
const answers = async (response: Response) => ((await response.json()) as { results: { status: string }[] }).results.map((r) => r.status);

describe('the outbox objects', () => {
  it(`spread ${VISITORS} visitors: at most 3 object calls per /collect of 2 items, the busiest object under 1/8 of the calls`, async () => {
    const site = `pk_shards_${crypto.randomUUID().slice(0, 8)}`;
    const vars = { RELAY_SITES: sites({ key: site, origins: [ORIGIN] }) };
    const batches = Array.from({ length: VISITORS }, (_, v) => ({ queue: crypto.randomUUID(), batch: [track(v), track(v)] }));
    const before = await usage(DEFAULT_SHARDS);
    // The counts live in each object's instance, which workerd evicts once idle 10 s (and counts
    // from 0 again): at load 23 the 200 took 43 s and one outbox object's count came back one short
    // (199). Asked for its usage (not a call) every 2 s, no object is idle so long.
    const keepAlive = setInterval(() => void usage(DEFAULT_SHARDS).catch(() => {}), 2_000);
    try {
      for (let start = 0; start < VISITORS; start += 25) {
        const statuses = await Promise.all(
          batches
            .slice(start, start + 25)
            .map(async ({ queue, batch }, i) => answers(await post(vars, { key: site, queue, batch }, `198.51.100.${(start + i) % 250}`))),
        );
        expect(statuses.flat().every((status) => status === 'accepted')).toBe(true);
      }
    } finally {
      clearInterval(keepAlive);
    }
    const after = await usage(DEFAULT_SHARDS);
    const calls = [...since(before.outbox, after.outbox), ...since(before.router, after.router)];
    const total = calls.reduce((sum, n) => sum + n, 0);
    const busiest = Math.max(...calls);
    console.log(
      `shards: ${VISITORS} /collect → ${total} object calls (${total / VISITORS} per /collect); busiest object ${busiest} (${Math.round((busiest / total) * 1000) / 10}%); outbox ${calls.slice(0, DEFAULT_SHARDS).join(' ')}; routers ${calls.slice(DEFAULT_SHARDS).join(' ')}`,
    );
    // Two items a visitor: at most two router objects and the browser's one outbox object.
    expect(total / VISITORS).toBeLessThanOrEqual(3);
    expect(since(before.outbox, after.outbox).reduce((sum, n) => sum + n, 0)).toBe(VISITORS);
    expect(busiest).toBeLessThanOrEqual(total / 8);

    // Retries from the same queue (another tab, a beacon) meet the same object: all duplicates.
    const again = await Promise.all(
      batches.slice(0, 50).map(async ({ queue, batch }) => answers(await post(vars, { key: site, queue, batch }, '198.51.100.1'))),
    );
    expect(again.flat().every((status) => status === 'duplicate')).toBe(true);

    // The same items under another queue id (a second browser profile's copy, a server): still duplicates.
    const elsewhere = await Promise.all(
      batches.slice(50, 100).map(async ({ batch }) => answers(await post(vars, { key: site, queue: crypto.randomUUID(), batch }, '198.51.100.2'))),
    );
    expect(elsewhere.flat().every((status) => status === 'duplicate')).toBe(true);
    // 200 /collect through workerd, each to the loopback platform in the runner's process: about
    // 16 s on a busy 2-core machine alone, and more beside the rest of the suite. Nothing here is timed.
  }, 180_000);

  it('honours RELAY_SHARDS: with 4, only the first 4 outbox and router objects are called', async () => {
    const site = `pk_shards_${crypto.randomUUID().slice(0, 8)}`;
    const vars = { RELAY_SITES: sites({ key: site, origins: [ORIGIN] }), RELAY_SHARDS: '4' };
    const before = await usage(DEFAULT_SHARDS);
    await Promise.all(
      Array.from({ length: 40 }, async (_, v) => {
        const response = await post(vars, { key: site, queue: crypto.randomUUID(), batch: [track(v)] }, `198.51.100.${v}`);
        expect(await answers(response)).toEqual(['accepted']);
      }),
    );
    const after = await usage(DEFAULT_SHARDS);
    for (const kind of ['outbox', 'router'] as const) {
      const calls = since(before[kind], after[kind]);
      expect(calls.slice(0, 4).every((n) => n > 0)).toBe(true);
      expect(calls.slice(4).every((n) => n === 0)).toBe(true);
    }
  });
});
