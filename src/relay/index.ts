/**
 * The relay, runtime-neutral: `createRelay(config, deps)` is a Hono app whose `fetch` runs on
 * Workers, Node, Deno and Bun. Runtime entries: `cdp-edge/relay/cloudflare`, `cdp-edge/relay/node`.
 * @module
 */
export { createRelay, type RelayDeps } from './app.js';
export { fetchTransport, type Transport, type TransportAnswer, type TransportRequest } from './deliver/transport.js';
export type { UpstreamCall } from './core/observe.js';
export { parseConfig, type RelayConfig } from './core/config.js';
export { parseSites, type SiteConfig, type Verify } from './core/sites.js';
export { MISCONFIGURED, RelayConfigError, RelayHttpError } from './core/errors.js';
export { createMemoryStore } from './state/memory.js';
export { lookupCounter, type RelayStore, type Claim, type DedupeScope, type Settlement, type StoreStats } from './state/store.js';
export { createMemoryLimiter, refill, withLimitAll, type RateLimiter, type OwnLimiter, type Rate, type LimitDecision, type Ask } from './core/limits.js';
export { consoleLogger, silentLogger, type Logger, type LogLine } from './core/logging.js';
export { identityHash, userHash, createIdentity, type Identity, type IdentityOptions } from './ingest/identity.js';
export { snippetVersion, SNIPPET_CACHE, VERSIONED_SNIPPET_CACHE } from './ingest/snippet.js';
export { resolveClientIp } from './core/client-ip.js';
export { systemClock, type Clock } from './core/clock.js';
export type { Backoff } from './deliver/caller.js';
export type { ClientInfo, CfGeo } from './ingest/enrich.js';
export type { Enqueue, Enqueued } from './workers/handoff.js';
export type { ItemResult, ItemStatus } from '../api/collect.js';
export { createProxyRoutes, type ProxyOptions } from './proxy/index.js';
export { parseTokens, hashToken, createToken, type TokenConfig } from './core/tokens.js';
