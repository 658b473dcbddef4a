/**
 * The workerd side of the shared suite: the real Worker entry (src/relay/cloudflare.ts) called
 * inside workerd with its Durable Object binding and per-test variables. Requests carry what
 * Cloudflare adds: CF-Connecting-IP and request.cf.
 */
import type { Outbox, OutboxItem } from '../../src/relay/state/outbox.js';
import { abortAllDurableObjects, createExecutionContext, env } from 'cloudflare:test';
import worker from '../../src/relay/cloudflare.js';
import { pacerName } from '../../src/relay/workers/delivery.js';
import { createShardedOutbox } from '../../src/relay/workers/outbox.js';
import { DEFAULT_SHARDS } from '../../src/relay/workers/state.js';
import { type UpstreamControl, upstreamControl } from '../relay/support/control.js';
import { API_KEY, ORIGIN, sites, type PostOptions, type RelayTarget, type RelayUnderTest } from '../relay/suite/target.js';

export const VISITOR_IP = '203.0.113.9';
export const CF = { country: 'FR', region: 'Île-de-France', city: 'Paris', latitude: '48.85670', longitude: '2.35080' };
export const CF_CUSTOM = { country_name: 'France', region_name: 'Île-de-France', city_name: 'Paris', lat: 48.8567, lng: 2.3508 };

const ctx = createExecutionContext();

export function workerdTarget(): RelayTarget {
  const upstreamUrl = env['TEST_UPSTREAM'] as string;
  return {
    name: 'workerd',
    deliversLater: true,
    upstream: upstreamControl(upstreamUrl),
    async start(extra = {}) {
      const vars = { CDP_API_KEY: API_KEY, CDP_BASE_URL: upstreamUrl, RELAY_SITES: sites({ key: 'pk_test', origins: [ORIGIN] }), ...extra };
      // A new env object is a new Worker instance (config parsed anew); the Durable Objects are shared.
      let instance = { ...env, ...vars };
      const outbox = () => createShardedOutbox(env['RELAY_OUTBOX'], Number((instance as Record<string, unknown>)['RELAY_SHARDS'] ?? DEFAULT_SHARDS));
      // The outbox objects are the deployment's, shared by every test: what earlier tests accepted goes first.
      await drained(outbox());
      const send = (path: string, init: RequestInit = {}) => {
        const headers = new Headers(init.headers);
        // A case may send from an address of its own (test/relay/suite/capacity-cases.ts).
        if (!headers.has('cf-connecting-ip')) headers.set('cf-connecting-ip', VISITOR_IP);
        return worker.fetch(new Request(`https://relay.example.com${path}`, { ...init, headers, cf: CF } as RequestInit), instance as never, ctx);
      };
      const relay: RelayUnderTest = {
        visitorIp: VISITOR_IP,
        visitorCustom: CF_CUSTOM,
        fetch: send,
        drained: () => drained(outbox()),
        deadLetters: async () => {
          const keys = new Set((JSON.parse(vars.RELAY_SITES) as { key: string }[]).map((site) => site.key));
          return (await outbox().deadLetters()).filter((letter) => keys.has(letter.site)).map(({ id, reason }) => ({ id, reason }));
        },
        post(body, options: PostOptions = {}) {
          const headers: Record<string, string> = { ...options.headers };
          if (options.origin !== null) headers['origin'] = options.origin ?? ORIGIN;
          if (options.contentType !== null) headers['content-type'] = options.contentType ?? 'text/plain;charset=UTF-8';
          const payload = typeof body === 'string' ? body : JSON.stringify(body);
          return send('/collect', { method: 'POST', headers, body: payload });
        },
        async restart() {
          // Durable Objects lose their memory but keep their SQLite storage, as on a real restart.
          await abortAllDurableObjects();
          instance = { ...env, ...vars };
        },
        async close() {},
      };
      return relay;
    },
  };
}

/**
 * Resolves once the outbox objects hold nothing to send (every accepted item delivered or
 * dead-lettered) and none is delivering: their alarms run on their own, as deployed.
 */
export async function drained(outbox: Outbox, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { pending } = await outbox.stats();
    if (pending === 0) return;
    if (Date.now() > until) throw new Error(`the outbox objects did not drain within ${timeoutMs} ms (${pending} pending)`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** A track of `email` as the test queue carries it (what /collect's producer sends), for the site of wrangler.toml. */
export const queuedItem = (id: string, email: string): OutboxItem => ({
  site: 'pk_queue',
  id,
  kind: 'activity',
  entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': email } },
  browser: `b-${id}`,
  visitor: 'v',
  accepted: Date.now(),
});

/**
 * Resolves once nothing queued so far can still reach the platform: a last message with an item
 * of its own goes into the test queue (the site of wrangler.toml), and once the platform has that
 * item, every message queued before it was consumed (the queue hands batches to the consumer in
 * order, one at a time); then the outbox objects drain. A copy still waiting in the queue would
 * have been delivered by then, which a fixed wait could only hope for.
 */
export async function queueSettled(upstream: UpstreamControl, timeoutMs = 20_000): Promise<void> {
  const id = crypto.randomUUID();
  const email = `settled-${id}@example.com`;
  const queue = env['TEST_QUEUE'] as { sendBatch(messages: { body: unknown }[]): Promise<unknown> };
  await queue.sendBatch([{ body: queuedItem(id, email) }]);
  const delivered = async () =>
    (await upstream.received()).some(
      (call) =>
        call.path === '/v1/activities/create' &&
        call.status >= 200 &&
        call.status < 300 &&
        (call.body.activities ?? []).some((activity: { fields?: Record<string, unknown> }) => activity.fields?.['str::email'] === email),
    );
  const until = Date.now() + timeoutMs;
  while (!(await delivered())) {
    if (Date.now() > until) throw new Error(`the queue did not deliver its last message within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  await drained(createShardedOutbox(env['RELAY_OUTBOX'], DEFAULT_SHARDS), timeoutMs);
}

/** POSTs one item to /collect from browser `queue` at address `ip`, for site `key` (verify off). */
export function postItem(key: string, queue: string, ip: string, item: unknown): Promise<Response> {
  const request = new Request('https://relay.example.com/collect', {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain', 'cf-connecting-ip': ip },
    body: JSON.stringify({ key, queue, batch: [item] }),
  });
  return worker.fetch(request, { ...env, RELAY_SITES: sites({ key, origins: [ORIGIN], verify: 'off' }) } as never, createExecutionContext());
}

/**
 * What the pacer object `name` served so far (by default the key's, the one the Worker delivers
 * through): its requests, and those answered a wait their caller could not wait out in it.
 */
export async function pacerUsage(name = pacerName(env['CDP_BASE_URL'] as string, env['CDP_API_KEY'] as string)): Promise<{ calls: number; outwaited: number }> {
  const namespace = env['RELAY_STATE'] as { idFromName(name: string): unknown; get(id: unknown): { usage(): Promise<{ calls: number; outwaited: number }> } };
  return await namespace.get(namespace.idFromName(name)).usage();
}

/** Requests served so far by the pacer object `name` ({@link pacerUsage}). */
export async function pacerRequests(name?: string): Promise<number> {
  return (await pacerUsage(name)).calls;
}
