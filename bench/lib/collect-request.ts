/**
 * A `/collect` request as the relay's handler takes it (its body already read), and the visitor
 * addresses and tracks the diagnostics send: what bench/diagnose/ingest-cost.ts and deliver-cost.ts
 * hand `createRelayHandlers(...).collect`.
 */
import { uuid } from '../../src/browser/uuid.js';
import type { CollectRequest } from '../../src/relay/ingest/body.js';

/** The request of `text` from `origin`, as the Node entry hands it to the handler. */
export const collectRequest = (origin: string, text: string): CollectRequest => ({
  origin,
  contentType: 'text/plain',
  contentLength: String(Buffer.byteLength(text)),
  read: async () => ({ text, size: Buffer.byteLength(text) }),
});

/** The `n`th of the visitors' IPv4 addresses (10.x.y.z). */
export const visitorAddress = (n: number): string => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

/** A track as the snippet sends it, naming its person (the `n`th), with `ts` its time and a new v7 id. */
export const benchTrack = (n: number, ts: string) => ({
  id: uuid(),
  type: 'track',
  ts,
  activity_id: 'act:cm:bench',
  attributes: { 'str:cm:plan': 'pro' },
  person: { 'str::email': `u${n}@bench.example.com` },
});
