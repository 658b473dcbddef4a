/**
 * `GET /cdp.js` (and its alias): the built snippet, cached so that a page still gets it while
 * the relay is down.
 *
 * - `/cdp.js` is fresh for a week, then revalidated in the background (`stale-while-revalidate`)
 *   and still used for 30 days when the relay cannot answer (`stale-if-error`).
 * - `/cdp.js?v=<version>`, where the version is the ETag without its quotes, is the same file
 *   served `immutable` for a year: it stays fresh in the cache long after plain `/cdp.js` would
 *   need the relay (some engines ignore `stale-if-error`). WebKit still asks again on a reload,
 *   so a page reloaded there while the relay is down has no snippet (docs/snippet.md). A `v`
 *   naming another build (a page rendered before an upgrade) gets today's file with the ordinary
 *   headers.
 * @module
 */
import { relayError } from '../../api/index.js';
import { toHex } from '../core/encoding.js';
import { createLastValues } from '../core/last-value.js';

/** The snippet's bytes or text, or a loader for them (called until it gives them, which are then kept). */
export type SnippetSource = Uint8Array | string | (() => Promise<Uint8Array | string | undefined>);

const COMMON = {
  'Content-Type': 'text/javascript; charset=utf-8',
  'Cross-Origin-Resource-Policy': 'cross-origin',
  'X-Content-Type-Options': 'nosniff',
};

/** Cache-Control of `/cdp.js`: a week fresh, a day revalidated in the background, 30 days used when the relay errs. */
export const SNIPPET_CACHE = 'public, max-age=604800, stale-while-revalidate=86400, stale-if-error=2592000';
/** Cache-Control of `/cdp.js?v=<version>`: that URL never changes. */
export const VERSIONED_SNIPPET_CACHE = 'public, max-age=31536000, immutable';

/** The version of a snippet: the first 24 hex digits of its SHA-256 (also its ETag, quoted). */
export async function snippetVersion(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)).slice(0, 12));
}

/**
 * A handler answering the snippet from `source`, or 404 in the error shape when there is none.
 * The snippet is kept once loaded; until then each request loads it for itself, never awaiting
 * another's load: on Workers the load is a fetch of the static assets, which belongs to the
 * request that made it and ends with it when its client goes away, and a shared promise of it
 * would leave every later `/cdp.js` of the isolate unanswered (test/workerd/cut-off.test.ts).
 */
export function createSnippetHandler(source: SnippetSource | undefined): (request: Request) => Promise<Response> {
  // Kept for good once there; none yet (a build may appear later): the next request tries again.
  const loaded = createLastValues<{ bytes: Uint8Array<ArrayBuffer>; version: string } | undefined>({
    freshMs: Number.POSITIVE_INFINITY,
    trusted: (snippet) => snippet !== undefined,
    maxKeys: 1,
  });
  const load = async () => {
    const raw = typeof source === 'function' ? await source() : source;
    if (raw === undefined) return undefined;
    const bytes: Uint8Array<ArrayBuffer> = typeof raw === 'string' ? new TextEncoder().encode(raw) : new Uint8Array(raw);
    return { bytes, version: await snippetVersion(bytes) };
  };
  return async (request) => {
    const snippet = (await loaded.get('', 0, () => load().catch(() => undefined))).value;
    if (!snippet) {
      return Response.json(relayError('snippet_not_built', 'The snippet is not available; build it with `npm run build` (it becomes dist/cdp.js).'), {
        status: 404,
        headers: { 'Cache-Control': 'no-store' },
      });
    }
    const versioned = new URL(request.url).searchParams.get('v') === snippet.version;
    const etag = `"${snippet.version}"`;
    const headers = { ...COMMON, 'Cache-Control': versioned ? VERSIONED_SNIPPET_CACHE : SNIPPET_CACHE, ETag: etag };
    if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers });
    return new Response(snippet.bytes, { headers });
  };
}
