/**
 * The proxy's conformance suite inside workerd: the same handler (createProxyRoutes) running on
 * Web Crypto, web streams and Hono in the Workers runtime, with the in-test platform reached
 * through the injected `fetch`. The Worker entry itself is covered in proxy-entry.test.ts.
 */
import { createProxyRoutes } from '../../src/relay/proxy/index.js';
import { proxySuite } from '../relay/proxy-suite.js';

proxySuite('workerd, createProxyRoutes', async ({ tokens, apiKey, upstream, logger, now, sleep }) => {
  const proxy = createProxyRoutes({
    tokens,
    upstream: { baseUrl: 'https://platform.test', apiKey },
    fetch: async (input, init) => upstream.fetch(new Request(input, init)),
    logger,
    now,
    sleep,
  });
  return {
    request: async (path, init) => proxy.fetch(new Request(`https://relay.example.com${path}`, init)),
    close: async () => {},
  };
});
