// GET /cdp.js as browsers cache it: a page keeps its snippet while the relay is down, through
// `stale-if-error` on /cdp.js and through the versioned URL served `immutable`.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createRelay } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import { createMemoryStore } from '../../src/relay/state/memory.js';

const SNIPPET = '!function(){window.cdpLoaded=1}();';
const VERSION = createHash('sha256').update(SNIPPET).digest('hex').slice(0, 24);

const relay = (snippet: string | null = SNIPPET, env: Record<string, string> = {}) =>
  createRelay(
    parseConfig({
      CDP_API_KEY: 'sk_snippet_test',
      CDP_BASE_URL: 'https://upstream.test',
      RELAY_SITES: JSON.stringify([{ key: 'pk_snippet', origins: ['https://shop.example.com'] }]),
      ...env,
    }),
    { fetch: (async () => new Response(null, { status: 500 })) as typeof fetch, store: createMemoryStore(), ...(snippet === null ? {} : { snippet }) },
  );

/** The directives of a Cache-Control value, e.g. `{ 'max-age': 604800, public: true }`. */
const directives = (value: string | null) =>
  Object.fromEntries(
    (value ?? '').split(/,\s*/).map((part) => {
      const [name, seconds] = part.split('=');
      return [name, seconds === undefined ? true : Number(seconds)];
    }),
  );

describe('GET /cdp.js', () => {
  it('may be used stale while revalidating and, for 30 days, while the relay answers with errors or not at all', async () => {
    for (const path of ['/cdp.js', '/t/app.js']) {
      const response = await relay(SNIPPET, { RELAY_SCRIPT_PATH: '/t/app.js' }).request(path);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe(SNIPPET);
      expect(directives(response.headers.get('cache-control'))).toEqual({
        public: true,
        'max-age': 604800,
        'stale-while-revalidate': 86400,
        'stale-if-error': 2592000,
      });
      // The ETag is the version the long-lived URL takes.
      expect(response.headers.get('etag')).toBe(`"${VERSION}"`);
    }
  });

  it('serves /cdp.js?v=<version> immutable for a year, the same bytes, and answers its revalidation with 304', async () => {
    const app = relay();
    const response = await app.request(`/cdp.js?v=${VERSION}`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(SNIPPET);
    expect(directives(response.headers.get('cache-control'))).toEqual({ public: true, 'max-age': 31536000, immutable: true });
    const again = await app.request(`/cdp.js?v=${VERSION}`, { headers: { 'if-none-match': `"${VERSION}"` } });
    expect(again.status).toBe(304);
    expect(again.headers.get('cache-control')).toContain('immutable');
  });

  it("answers a version of another build (a page rendered before an upgrade) with today's file, not immutable", async () => {
    const response = await relay().request('/cdp.js?v=0123456789abcdef01234567');
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(SNIPPET);
    expect(response.headers.get('cache-control')).not.toContain('immutable');
    expect(response.headers.get('cache-control')).toContain('stale-if-error');
  });

  it('is 404 in the error shape, never cached, when no snippet is built', async () => {
    const response = await relay(null).request(`/cdp.js?v=${VERSION}`);
    expect(response.status).toBe(404);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('snippet_not_built');
  });
});
