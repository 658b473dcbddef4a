/** The relay's one upstream caller and its runtime-neutral transport (the Node one is in undici.ts). */
export { createUpstream, sharedBackoff, type Backoff, type Upstream, type UpstreamAnswer, type UpstreamCall, type UpstreamOptions } from './caller.js';
export { discard, fetchTransport, readText, UpstreamTimeout, type Transport, type TransportAnswer, type TransportRequest } from './transport.js';
