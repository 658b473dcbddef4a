/**
 * The relay's admin door: the outbox's dead letters over HTTP, for a token with the `admin`
 * scope, on the relay's own port (so a deployed Worker's are reachable as well as a Node relay's).
 * Served from the {@link Outbox} interface whatever the store; `cdp-edge outbox --relay URL`
 * calls it. Under `/admin/`, which no platform endpoint (`/v1/...`) can take.
 *
 * - `GET  /admin/outbox/dead-letters?site=&limit=` → `{ "dead_letters": [...] }`, oldest first
 * - `POST /admin/outbox/retry` `{ "seqs": [1, 2] }` or `{ "all": true }` → `{ "retried": n }`
 * - `POST /admin/outbox/drop`  the same → `{ "dropped": n }`
 * - `GET  /admin/outbox/stats` → `{ "pending", "dead", "remembered" }`
 * - `POST /admin/erase` `{ "email": "…" }` or `{ "external_id": "…" }` (`site`, `days` optional) →
 *   the erasure's report (ops/erase.ts)
 * @module
 */
import { Hono, type Context } from 'hono';
import * as v from 'valibot';
import { relayError } from '../../api/index.js';
import { RelayHttpError } from '../core/errors.js';
import type { Logger } from '../core/logging.js';
import { createTokenVerifier, type TokenConfig } from '../core/tokens.js';
import { authenticate } from '../core/auth.js';
import type { Outbox } from '../state/outbox.js';
import type { Upstream } from '../deliver/caller.js';
import type { SuppressionList } from '../state/suppression.js';
import { deleteOnPlatform, erasureOf, IN_FLIGHT, parseEraseRequest, reportOf } from './erase.js';

export const ADMIN_PATHS = ['/admin/outbox/dead-letters', '/admin/outbox/retry', '/admin/outbox/drop', '/admin/outbox/stats', '/admin/erase'] as const;

/** The most dead letters one list answers (`limit` above it is cut to it). */
export const MAX_LISTED = 1_000;
/** A retry or drop body is a short list of seqs: anything longer is refused unread. */
const MAX_BODY_BYTES = 64 * 1024;

const Chosen = v.union([
  v.strictObject({ seqs: v.pipe(v.array(v.pipe(v.number(), v.safeInteger(), v.minValue(1))), v.minLength(1), v.maxLength(MAX_LISTED)) }),
  v.strictObject({ all: v.literal(true) }),
]);

export interface AdminOptions {
  tokens: readonly TokenConfig[];
  /** the outbox whose dead letters are served; undefined: this relay has none here (503 with the reason) */
  outbox: Outbox | undefined;
  now: () => number;
  logger: Logger;
  /** what an erasure needs besides the outbox: the platform, and the suppression list `/collect` reads */
  erasure: {
    upstream: Upstream;
    suppression: SuppressionList;
    /** the configured sites' keys: an erasure naming another site is refused, not recorded for nobody */
    siteKeys: { has(key: string): boolean };
    sleep: (ms: number) => Promise<void>;
  };
  /** logs an unexpected failure of the store with its cause (scrubbed) */
  onError: (error: unknown, path: string, method: string) => void;
}

const invalid = (message: string) => new RelayHttpError(400, 'invalid_request', message);

/** The JSON body, within {@link MAX_BODY_BYTES}; 400 saying what to send (`what`) otherwise. */
async function jsonBody(c: Context, what: string): Promise<unknown> {
  const length = Number(c.req.header('content-length') ?? 0);
  if (length > MAX_BODY_BYTES) throw invalid(`the body is over ${MAX_BODY_BYTES} bytes; ${what}`);
  const text = await c.req.text();
  if (text.length > MAX_BODY_BYTES) throw invalid(`the body is over ${MAX_BODY_BYTES} bytes; ${what}`);
  try {
    return JSON.parse(text);
  } catch {
    throw invalid(`the body is not JSON; ${what}`);
  }
}

async function chosen(c: Context): Promise<readonly number[] | undefined> {
  const body = await jsonBody(c, `send {"seqs":[…]} (at most ${MAX_LISTED}) or {"all":true}`);
  const parsed = v.safeParse(Chosen, body);
  if (!parsed.success) throw invalid(`send {"seqs":[…]} (1 to ${MAX_LISTED} whole numbers from the list) or {"all":true}`);
  return 'all' in parsed.output ? undefined : parsed.output.seqs;
}

/** A whole number from 1 up, or undefined when absent; 400 otherwise. */
function limitOf(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const limit = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(limit) || limit < 1) throw invalid(`limit must be a whole number above 0; got ${JSON.stringify(raw)}`);
  return Math.min(limit, MAX_LISTED);
}

export function createAdminRoutes(options: AdminOptions): Hono {
  const verify = createTokenVerifier(options.tokens);
  const app = new Hono();

  /** The admin token and the outbox, or the documented error. */
  const admit = (c: Context): { token: TokenConfig; outbox: Outbox } => {
    const token = authenticate(c.req.header('authorization'), verify);
    if (!token.scopes.includes('admin'))
      throw new RelayHttpError(403, 'forbidden', `token ${JSON.stringify(token.name)} lacks the admin scope the outbox's dead letters need`);
    if (options.outbox === undefined)
      throw new RelayHttpError(503, 'no_outbox', 'this relay keeps no outbox here, so it has no dead letters to serve', { retryAfter: 60 });
    return { token, outbox: options.outbox };
  };

  /** Runs a store step; a failure is logged with its cause and answered 503, never half-done silently. */
  const step = async <T>(c: Context, run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      options.onError(error, new URL(c.req.url).pathname, c.req.method);
      throw new RelayHttpError(503, 'relay_unavailable', "the relay's outbox did not answer; retry later (a retry or drop is safe to repeat)", {
        retryAfter: 5,
        cause: error,
      });
    }
  };

  const audit = (c: Context, token: TokenConfig, action: string, count: number, named: readonly number[] | undefined | number, more: object = {}) =>
    options.logger({
      ts: new Date(options.now()).toISOString(),
      kind: 'admin',
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      status: 200,
      ms: 0,
      token: token.name,
      action,
      count,
      named: named === undefined ? 'all' : typeof named === 'number' ? named : named.length,
      ...more,
    });

  app.get('/admin/outbox/dead-letters', async (c) => {
    const { outbox } = admit(c);
    const site = c.req.query('site');
    const limit = limitOf(c.req.query('limit')) ?? MAX_LISTED;
    const letters = await step(c, () => outbox.deadLetters({ ...(site === undefined ? {} : { site }), limit }));
    return c.json({ dead_letters: letters });
  });

  app.post('/admin/outbox/retry', async (c) => {
    const { token, outbox } = admit(c);
    const named = await chosen(c);
    const retried = await step(c, () => outbox.retryDead(named, options.now()));
    audit(c, token, 'retry', retried, named);
    return c.json({ retried });
  });

  app.post('/admin/outbox/drop', async (c) => {
    const { token, outbox } = admit(c);
    const named = await chosen(c);
    const dropped = await step(c, () => outbox.dropDead(named));
    audit(c, token, 'drop', dropped, named);
    return c.json({ dropped });
  });

  app.get('/admin/outbox/stats', async (c) => {
    const { outbox } = admit(c);
    return c.json(await step(c, () => outbox.stats()));
  });

  // Erasure (ops/erase.ts): suppress, wait for every relay's copy of the list, drop, then delete on the platform.
  app.post('/admin/erase', async (c) => {
    const { token, outbox } = admit(c);
    const request = parseEraseRequest(await jsonBody(c, 'send {"email":"…"} or {"external_id":"…"}'));
    if (request.site !== undefined && !options.erasure.siteKeys.has(request.site))
      throw invalid(
        `no site with the key ${JSON.stringify(request.site)} is configured here (RELAY_SITES); leave "site" out to erase the person on every site`,
      );
    const { upstream, suppression, sleep } = options.erasure;
    const { person, hash, until } = erasureOf(request, options.now());
    const rows = [{ site: request.site ?? '', hash }];
    await step(c, () => outbox.suppress(rows, until, options.now()));
    suppression.add(rows);
    await sleep(suppression.refreshMs);
    const erased = await step(c, () => outbox.erase(person, request.site, options.now()));
    const platform = erased.inFlight > 0 ? { status: 'skipped' as const, reason: IN_FLIGHT } : await deleteOnPlatform(upstream, person);
    const report = reportOf(request, hash, until, erased, platform);
    audit(c, token, 'erase', erased.waiting + erased.dead, 1, {
      person: report.person,
      waiting: erased.waiting,
      dead: erased.dead,
      in_flight: erased.inFlight,
      platform: platform.status,
      ...(platform.status === 'deleted' ? { deleted: platform.deleted } : {}),
    });
    return c.json(report);
  });

  app.all('/admin/*', (c) =>
    c.json(relayError('not_found', `Nothing is served at ${c.req.method} ${new URL(c.req.url).pathname}; see ${ADMIN_PATHS.join(', ')}.`), 404),
  );
  return app;
}
