/**
 * Identity verification. A site's server vouches for one identifier of its visitor with
 * `user_hash` = hex HMAC-SHA256, under `RELAY_IDENTITY_SECRET`, of the field ID, a newline and
 * the value ({@link identityHash}); the relay checks it in constant time. Binding the hash to its
 * field means a hash the server made for an external ID never proves the same string as an email.
 * Proven people are handed back as a signed, short-lived, cookie-free token (`identity` in the
 * answer) that the snippet sends with later batches, so later items can name them without a hash.
 * A token's lifetime is absolute: it runs from the `user_hash` that proved its people, and the
 * token handed back for a request that proved nothing new keeps the expiry of the one it carried.
 *
 * Token: `v1.<expiry, base36 seconds>.<subject digests joined by "~">.<signature>`; a subject
 * digest is an HMAC of site + field + value, so the token carries no personal data.
 * What a browser may write with what it has proven is decided in `identity-rules.ts`.
 * @module
 */

import type { RelayConfig } from '../core/config.js';
import { toBase64url, toHex } from '../core/encoding.js';

const encoder = new TextEncoder();

/** Compares two strings in time that depends only on their length, never on where they differ. */
export function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ (y[i % Math.max(1, y.length)] ?? 0);
  return diff === 0;
}

/** What a `user_hash` signs: the field ID, a newline, the value (a field ID never holds a newline). */
export const identityMessage = (field: string, value: string): string => `${field}\n${value}`;

/**
 * HMAC-SHA256 of `message` under `key`. Web Crypto's is the default (every runtime has it); the
 * Node entry gives `node:crypto`'s, several times cheaper per call (no promise, no imported key).
 */
export type Hmac = (key: Uint8Array<ArrayBuffer>, message: Uint8Array<ArrayBuffer>) => Uint8Array | Promise<Uint8Array>;

/** HMAC-SHA256 by Web Crypto (Workers, browsers, Node): imports the key on first use of each. */
export function webCryptoHmac(): Hmac {
  const keys = new WeakMap<Uint8Array<ArrayBuffer>, Promise<CryptoKey>>();
  return async (key, message) => {
    let imported = keys.get(key);
    if (imported === undefined) {
      imported = crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
      keys.set(key, imported);
    }
    return new Uint8Array(await crypto.subtle.sign('HMAC', await imported, message));
  };
}

const defaultHmac = webCryptoHmac();

async function hmacHex(secret: string, message: string): Promise<string> {
  return toHex(await defaultHmac(encoder.encode(secret), encoder.encode(message)));
}

/**
 * The `user_hash` your server renders for a signed-in visitor: hex HMAC-SHA256 under
 * `RELAY_IDENTITY_SECRET` of `field + "\n" + value`. It proves that identifier only.
 *
 * @example
 * const hash = await identityHash(process.env.RELAY_IDENTITY_SECRET!, 'str::email', 'ann@example.com');
 * // in the page: cdp('identify', { 'str::email': 'ann@example.com' }, { user_hash: hash })
 */
export function identityHash(secret: string, field: string, value: string): Promise<string> {
  if (field === '' || field.includes('\n')) throw new TypeError('identityHash: field must be a field ID such as "str::email"');
  return hmacHex(secret, identityMessage(field, value));
}

/**
 * Hex HMAC-SHA256 of `message` alone: the value-only `user_hash` of earlier versions.
 * @deprecated A value-only hash is not bound to a field, so a hash made for an external ID also
 * "proves" the same string as an email. The relay accepts it only with
 * `RELAY_IDENTITY_LEGACY_HASH=on`; use {@link identityHash}.
 */
export function userHash(secret: string, message: string): Promise<string> {
  return hmacHex(secret, message);
}

export interface Identity {
  /** true when `hash` is the field-bound hash of `field` = `value` ({@link identityHash}) */
  proves(field: string, value: string, hash: string): Promise<boolean>;
  /** true when legacy hashes are accepted and `hash` is the value-only HMAC of `value` */
  provesLegacy(value: string, hash: string): Promise<boolean>;
  /** the digest that stands for person `field`=`value` of `site` inside tokens */
  subject(site: string, field: string, value: string): Promise<string>;
  /** a token proving `subjects` until `expires` (ms since epoch, from the token they came from), else until now + ttl */
  issue(site: string, subjects: readonly string[], now: number, expires?: number): Promise<string>;
  /** the subjects of a valid, unexpired token of `site`; [] for anything else */
  read(site: string, token: string | undefined, now: number): Promise<string[]>;
  /** {@link read} with the token's expiry (ms since epoch); undefined for anything but a valid, unexpired token of `site` */
  open(site: string, token: string | undefined, now: number): Promise<{ subjects: string[]; expires: number } | undefined>;
}

export interface IdentityOptions {
  /** also accept the value-only hash of earlier versions (`RELAY_IDENTITY_LEGACY_HASH=on`) @default false */
  legacyHash?: boolean;
  /** the HMAC-SHA256 implementation @default Web Crypto's ({@link webCryptoHmac}) */
  hmac?: Hmac;
}

/** At most this many people per token: one browser rarely speaks for more. */
const MAX_SUBJECTS = 4;

/**
 * Token signatures an identity keeps, of the payloads it issued or read valid lately (the oldest
 * used goes first): a returning browser's token is read and handed back, the same payload until a
 * new proof, without an HMAC. About 200 B each.
 */
export const SIGNATURES_KEPT = 1024;

/** Identity checks under `secret`, issuing tokens valid for `ttlSeconds`. */
export function createIdentity(secret: string, ttlSeconds: number, options: IdentityOptions = {}): Identity {
  const hmac = options.hmac ?? webCryptoHmac();
  const userKey = encoder.encode(secret);
  // Tokens are signed with a key derived by SHA-256, not by HMAC under the secret: a site's server
  // hands out HMACs of strings a visitor chooses (user_hash of an external ID), so no token key may
  // be an HMAC of anything.
  const tokenKey = crypto.subtle.digest('SHA-256', encoder.encode(`cdp-edge identity token v1\u0000${secret}`)).then((digest) => new Uint8Array(digest));
  const mac = async (key: Uint8Array<ArrayBuffer> | Promise<Uint8Array<ArrayBuffer>>, message: string) => hmac(await key, encoder.encode(message));
  // What is signed, by what it says (`token\n<site>\n<payload>`); only signatures the identity made for a token it issued or found valid.
  const signatures = new Map<string, string>();
  const sign = async (signed: string) => signatures.get(signed) ?? toBase64url(await mac(tokenKey, signed));
  const keep = (signed: string, signature: string) => {
    signatures.delete(signed);
    signatures.set(signed, signature);
    if (signatures.size > SIGNATURES_KEPT) signatures.delete(signatures.keys().next().value!);
  };
  const matches = async (message: string, hash: string) => timingSafeEqual(toHex(await mac(userKey, message)), hash.toLowerCase());

  const open: Identity['open'] = async (site, token, now) => {
    if (typeof token !== 'string' || token.length > 1024) return undefined;
    const cut = token.lastIndexOf('.');
    if (cut < 0) return undefined;
    const payload = token.slice(0, cut);
    const [version, expiry, subjects] = payload.split('.');
    if (version !== 'v1' || expiry === undefined || subjects === undefined) return undefined;
    const signed = `token\n${site}\n${payload}`;
    const signature = await sign(signed);
    if (!timingSafeEqual(signature, token.slice(cut + 1))) return undefined;
    keep(signed, signature);
    const expires = parseInt(expiry, 36) * 1000;
    if (!(expires > now)) return undefined;
    return { subjects: subjects === '' ? [] : subjects.split('~'), expires };
  };

  return {
    proves: (field, value, hash) => matches(identityMessage(field, value), hash),
    async provesLegacy(value, hash) {
      return options.legacyHash === true && matches(value, hash);
    },
    async subject(site, field, value) {
      return toBase64url((await mac(tokenKey, `subject\n${site}\n${field}\n${value}`)).slice(0, 16));
    },
    async issue(site, subjects, now, expires) {
      const unique = [...new Set(subjects)].slice(-MAX_SUBJECTS);
      // Never later than a fresh proof's would be: a refresh cannot stretch a lifetime.
      const until = Math.floor(Math.min(expires ?? Number.POSITIVE_INFINITY, now + ttlSeconds * 1000) / 1000);
      const payload = `v1.${until.toString(36)}.${unique.join('~')}`;
      const signed = `token\n${site}\n${payload}`;
      const signature = await sign(signed);
      keep(signed, signature);
      return `${payload}.${signature}`;
    },
    async read(site, token, now) {
      return (await open(site, token, now))?.subjects ?? [];
    },
    open,
  };
}

/** Identities by HMAC implementation, then by secret and settings: built once, not per request. */
const WEB_CRYPTO = {};
const identities = new WeakMap<Hmac | typeof WEB_CRYPTO, Map<string, Identity>>();
export function identityFor(
  config: Pick<RelayConfig, 'identitySecret' | 'identityTtlSeconds' | 'identityLegacyHash'>,
  hmac: Hmac | undefined,
): Identity | undefined {
  if (config.identitySecret === undefined) return undefined;
  const byHmac = identities.get(hmac ?? WEB_CRYPTO) ?? new Map<string, Identity>();
  identities.set(hmac ?? WEB_CRYPTO, byHmac);
  const cacheKey = `${config.identityTtlSeconds}\u0000${config.identityLegacyHash}\u0000${config.identitySecret}`;
  let identity = byHmac.get(cacheKey);
  if (!identity) {
    identity = createIdentity(config.identitySecret, config.identityTtlSeconds, {
      legacyHash: config.identityLegacyHash,
      ...(hmac === undefined ? {} : { hmac }),
    });
    byHmac.set(cacheKey, identity);
  }
  return identity;
}
