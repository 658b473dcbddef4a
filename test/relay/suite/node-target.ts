/** The Node side of the shared suite: `startRelay` on loopback, state in a temporary file. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRelay, type RunningRelay } from '../../../src/relay/node.js';
import { silentLogger } from '../../../src/relay/core/logging.js';
import { upstreamControl } from '../support/control.js';
import { API_KEY, ORIGIN, sites, type PostOptions, type RelayTarget, type RelayUnderTest } from './target.js';

export const SNIPPET = '/* cdp.js test build */ window.cdp = window.cdp || function () {};';

export function nodeTarget(upstreamUrl: string): RelayTarget {
  const upstream = upstreamControl(upstreamUrl);
  return {
    name: 'node',
    deliversLater: true,
    upstream,
    async start(extra = {}) {
      const env = { CDP_API_KEY: API_KEY, CDP_BASE_URL: upstreamUrl, RELAY_SITES: sites({ key: 'pk_test', origins: [ORIGIN] }), ...extra };
      const stateFile = join(mkdtempSync(join(tmpdir(), 'cdp-relay-')), 'state.jsonl');
      const launch = () => startRelay({ port: 0, env, stateFile, logger: silentLogger, snippet: SNIPPET });
      let running: RunningRelay = await launch();
      const relay: RelayUnderTest = {
        visitorIp: '127.0.0.1',
        visitorCustom: undefined,
        fetch: (path, init) => fetch(`${running.url}${path}`, init),
        drained: () => running.drained(),
        deadLetters: async () => (await running.outbox.deadLetters()).map(({ id, reason }) => ({ id, reason })),
        post(body, options: PostOptions = {}) {
          const headers: Record<string, string> = { ...options.headers };
          if (options.origin !== null) headers['origin'] = options.origin ?? ORIGIN;
          if (options.contentType !== null) headers['content-type'] = options.contentType ?? 'text/plain;charset=UTF-8';
          const payload = typeof body === 'string' ? body : JSON.stringify(body);
          return fetch(`${running.url}/collect`, { method: 'POST', headers, body: payload });
        },
        async restart() {
          await running.close();
          running = await launch();
        },
        close: () => running.close(),
      };
      return relay;
    },
  };
}
