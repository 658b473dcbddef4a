/**
 * `GET /cdp.js` (and its alias): the built snippet with long cache headers and an ETag,
 * so browsers revalidate cheaply.
 * @module
 */
import { relayError } from '../api/index.js';
import { toHex } from './encoding.js';

/** The snippet's bytes or text, or a loader for them (called once, then cached). */
export type SnippetSource = Uint8Array | string | (() => Promise<Uint8Array | string | undefined>);

const HEADERS = {
  'Content-Type': 'text/javascript; charset=utf-8',
  // A week fresh, a day of stale-while-revalidate: the snippet changes rarely and queues everything anyway.
  'Cache-Control': 'public, max-age=604800, stale-while-revalidate=86400',
  'Cross-Origin-Resource-Policy': 'cross-origin',
  'X-Content-Type-Options': 'nosniff',
};

/** A handler answering the snippet from `source`, or 404 in the error shape when there is none. */
export function createSnippetHandler(source: SnippetSource | undefined): (request: Request) => Promise<Response> {
  let loaded: Promise<{ bytes: Uint8Array<ArrayBuffer>; etag: string } | undefined> | undefined;
  const load = async () => {
    const raw = typeof source === 'function' ? await source() : source;
    if (raw === undefined) return undefined;
    const bytes: Uint8Array<ArrayBuffer> = typeof raw === 'string' ? new TextEncoder().encode(raw) : new Uint8Array(raw);
    const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    const etag = `"${toHex(hash.slice(0, 12))}"`;
    return { bytes, etag };
  };
  return async (request) => {
    loaded ??= load().catch(() => undefined);
    const snippet = await loaded;
    if (!snippet) {
      loaded = undefined; // a build may appear later: try again next time
      return Response.json(relayError('snippet_not_built', 'The snippet is not available; build it with `npm run build` (it becomes dist/cdp.js).'), {
        status: 404,
        headers: { 'Cache-Control': 'no-store' },
      });
    }
    if (request.headers.get('if-none-match') === snippet.etag) return new Response(null, { status: 304, headers: { ...HEADERS, ETag: snippet.etag } });
    return new Response(snippet.bytes, { headers: { ...HEADERS, ETag: snippet.etag } });
  };
}
