/**
 * The Hono app: routes generated from ENDPOINT_LIST, `X-Api-Key` checking, JSON bodies,
 * rate limit, latency and fault mode, the count of calls, the dashboard at `/` and the test
 * hooks under `/_emulator`.
 * Runtime-neutral: no Node imports.
 * @module
 */
import { Hono, type Context } from 'hono';
import { ENDPOINT_LIST, REGIONS, UNKNOWN_ENDPOINT, findEndpoint, isRecord, platformError, rateLimitBody } from '../api/index.js';
import type { CallLog } from './calls.js';
import { dashboard } from './dashboard.js';
import { PlatformHttpError } from './errors.js';
import { failure, pickFault } from './faults.js';
import { HANDLERS, type HandlerContext } from './handlers.js';
import { checkFaults, type FaultSpec } from './options.js';
import type { RateLimiter } from './rate-limit.js';
import { toSnapshot } from './snapshot.js';

export interface AppHooks {
  reset(): void;
  /** every /v1 call is counted here with its answer */
  calls: CallLog;
  /** the per-key budget and bad-request ban */
  limiter: RateLimiter;
}

const json = (c: Context, status: number, body: unknown) => c.json(body as object, status as 200);

const error = (c: Context, status: number, message: string, details?: PlatformHttpError['details']) => json(c, status, platformError(status, message, details));

/** Reads a JSON body: `{}` when empty; 400 for another content type or malformed JSON. */
async function readBody(c: Context): Promise<{ body: unknown; bytes: number }> {
  const raw = await c.req.arrayBuffer();
  if (raw.byteLength === 0) return { body: {}, bytes: 0 };
  const type = c.req.header('Content-Type') ?? '';
  if (!/^application\/json\b/i.test(type)) throw new PlatformHttpError(400, `Content-Type must be application/json, got ${JSON.stringify(type)}`);
  try {
    return { body: JSON.parse(new TextDecoder().decode(raw)), bytes: raw.byteLength };
  } catch (cause) {
    throw new PlatformHttpError(400, `Malformed JSON body: ${(cause as Error).message}`, undefined, { cause });
  }
}

const foreignHosts = new Map(Object.entries(REGIONS).map(([region, base]) => [new URL(base).host, region]));

export function createApp(ctx: HandlerContext, hooks: AppHooks): Hono<{ Variables: { entries: number; arrived: number } }> {
  const { store, options } = ctx;
  const { limiter } = hooks;
  // `entries`: the items of a batch call, set once its body is read, for the call log
  const app = new Hono<{ Variables: { entries: number; arrived: number } }>();

  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set('Access-Control-Allow-Origin', '*');
  });
  app.options('*', (c) => {
    c.header('Access-Control-Allow-Methods', 'GET, POST, PUT, DELETE, OPTIONS');
    c.header('Access-Control-Allow-Headers', 'Content-Type, X-Api-Key');
    return c.body(null, 204);
  });

  app.get('/', async (c) => c.html(await dashboard(store, options)));

  const auth = async (c: Context, next: () => Promise<void>) => {
    const region = foreignHosts.get(new URL(c.req.url).host);
    // A key works only against its own region's address (docs/platform.md).
    if (c.req.header('X-Api-Key') !== options.key || (region !== undefined && region !== options.region)) {
      return error(c, 401, 'Invalid or missing API key: send the instance key in X-Api-Key');
    }
    await next();
  };
  // outermost, so a call refused by the budget, the key or a fault is counted with its answer
  app.use('/v1/*', async (c, next) => {
    await next();
    const endpoint = findEndpoint(c.req.method, c.req.path);
    if (endpoint) hooks.calls.record(endpoint.id, c.res.status, c.get('entries') ?? 0);
  });
  // the budget and the bad-request ban come first: a caller with a bad key is limited too
  app.use('/v1/*', async (c, next) => {
    // counted on the platform's own clock: at random, as it arrives or jitterMs later (its latency runs from its arrival)
    c.set('arrived', Date.now());
    if (options.jitterMs > 0 && options.random() < 0.5) await new Promise((resolve) => setTimeout(resolve, options.jitterMs));
    const wait = limiter.take();
    if (wait !== undefined) return json(c, 429, rateLimitBody(wait));
    await next();
    limiter.answered(c.res.status);
  });
  app.use('/v1/*', auth);
  app.use('/_emulator/*', auth);

  app.get('/_emulator/state', (c) => json(c, 200, toSnapshot(store)));
  app.get('/_emulator/calls', (c) => json(c, 200, { endpoints: hooks.calls.counts() }));
  app.post('/_emulator/reset', (c) => {
    hooks.reset();
    return json(c, 200, { reset: true });
  });
  app.put('/_emulator/faults', async (c) => {
    const { body } = await readBody(c);
    try {
      checkFaults(body);
    } catch (cause) {
      throw new PlatformHttpError(400, (cause as Error).message, undefined, { cause });
    }
    options.faults = body;
    return json(c, 200, { faults: body });
  });

  for (const endpoint of ENDPOINT_LIST) {
    const handler = HANDLERS[endpoint.id];
    app.on(endpoint.method, endpoint.path, async (c) => {
      // the time the platform spends on a call, before it applies it and answers
      const latencyLeft = options.latencyMs - (Date.now() - (c.get('arrived') ?? Date.now()));
      if (latencyLeft > 0) await new Promise((resolve) => setTimeout(resolve, latencyLeft));
      const fault = await pickFault(options.faults, endpoint.id, options.random, c.req.raw);
      const fail = async (spec: FaultSpec) => {
        options.onFault?.({ endpoint: endpoint.id, body: await c.req.text(), applied: spec.applied === true });
        return failure(spec, endpoint.id, c.req.raw, c.env);
      };
      if (fault && !fault.applied) return fail(fault);
      const { body, bytes } = await readBody(c);
      const answer = handler(ctx, body, bytes);
      const items = endpoint.chunking && isRecord(body) ? body[endpoint.chunking.items] : undefined;
      c.set('entries', Array.isArray(items) ? items.length : 0);
      // An `applied` fault strikes once the state has changed: only the answer is lost.
      return fault ? fail(fault) : json(c, 200, answer);
    });
  }

  app.notFound((c) => error(c, 404, UNKNOWN_ENDPOINT));
  app.onError((err, c) => {
    if (err instanceof PlatformHttpError) return error(c, err.status, err.message, err.details);
    return error(c, 500, `Internal emulator error: ${err.message}`);
  });
  return app;
}
