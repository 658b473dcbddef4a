/** The relay's upstream caller on an injected `fetch`, for units that check what was called when. */
import { createUpstream, type Upstream } from '../../../src/relay/deliver/caller.js';
import { fetchTransport } from '../../../src/relay/deliver/transport.js';

export function fetchUpstream(fetchImpl: typeof fetch, { now = Date.now, timeoutMs = 10_000 }: { now?: () => number; timeoutMs?: number } = {}): Upstream {
  return createUpstream({ apiKey: 'k', baseUrl: 'http://upstream.test', transport: fetchTransport(fetchImpl), timeoutMs, backoff: { until: 0 }, now });
}
