/**
 * The Worker of bench/workers.ts, written as a user writes theirs (`export { default, RelayState,
 * RelayOutbox } from 'cdp-edge/relay/cloudflare'`), here from the built dist/, plus one bench-only
 * route: `GET /__bench/usage` answers the calls (and, for the outbox objects, the alarms) each
 * Durable Object of the deployment served since it started, read with the objects' own `usage()`,
 * which is not counted as a call. The relay itself is the built one, untouched.
 */
import relay, { RelayOutbox, RelayState } from '../../dist/relay/cloudflare.js';
import { parseConfig } from '../../src/relay/core/config.ts';
import { pacerName } from '../../src/relay/workers/delivery.ts';
import { outboxName, routerName } from '../../src/relay/workers/outbox.ts';
import { REFUSAL_OBJECTS } from '../../src/relay/workers/refusals.ts';
import { countersName, DEFAULT_SHARDS, shardName } from '../../src/relay/workers/state.ts';

export { RelayOutbox, RelayState };

/** Every object the relay may call, by binding: `[binding, kind, name]`. */
function objects(env) {
  const config = parseConfig(env);
  const shards = Number(env.RELAY_SHARDS ?? DEFAULT_SHARDS);
  const range = (n) => Array.from({ length: n }, (_, i) => i);
  return [
    ...range(shards).map((n) => ['RELAY_OUTBOX', 'outbox', outboxName(n)]),
    ...range(shards).map((n) => ['RELAY_OUTBOX', 'router', routerName(n)]),
    ['RELAY_STATE', 'pacer', pacerName(config.baseUrl, config.apiKey)],
    ...range(REFUSAL_OBJECTS).map((n) => ['RELAY_STATE', 'refusals', `refusals#${n}`]),
    ...[...config.sites.values()].flatMap((site) => [
      ['RELAY_STATE', 'counters', countersName(site.key)],
      // the previous release's memory, asked by the routers (src/relay/workers/previous.ts)
      ...range(shards).map((n) => ['RELAY_STATE', 'previous', shardName(site.key, n)]),
      ...range(shards).map((n) => ['RELAY_STATE', 'previous', shardName(`delivered:${site.key}`, n)]),
    ]),
  ];
}

export default {
  async fetch(request, env, ctx) {
    if (new URL(request.url).pathname !== '/__bench/usage') return relay.fetch(request, env, ctx);
    try {
      return Response.json(await usage(env));
    } catch (error) {
      return new Response(String(error?.stack ?? error), { status: 500 });
    }
  },
  queue: relay.queue,
};

async function usage(env) {
  return Promise.all(
    objects(env).map(async ([binding, kind, name]) => {
      const namespace = env[binding];
      const { calls, alarms = 0 } = await namespace.get(namespace.idFromName(name)).usage();
      return { kind, name, calls, alarms };
    }),
  );
}
