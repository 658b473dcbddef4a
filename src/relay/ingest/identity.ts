/**
 * Identity verification. A site's server computes `user_hash` = hex HMAC-SHA256 of the
 * person's email (or external ID) under `RELAY_IDENTITY_SECRET`; the relay checks it in
 * constant time. Verified people are handed back as a signed, short-lived, cookie-free
 * token (`identity` in the answer) that the snippet sends with later batches, so a `track`
 * naming a person can prove it was verified earlier.
 *
 * Token: `v1.<expiry, base36 seconds>.<subject digests joined by "~">.<signature>`; a subject
 * digest is an HMAC of site + field + value, so the token carries no personal data.
 * @module
 */

import { toBase64url, toHex } from '../encoding.js';

const encoder = new TextEncoder();

/** Compares two strings in time that depends only on their length, never on where they differ. */
export function timingSafeEqual(a: string, b: string): boolean {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ (y[i % Math.max(1, y.length)] ?? 0);
  return diff === 0;
}

/** Hex HMAC-SHA256 of `message` under `secret`: what a site's server sends as `user_hash`. */
export async function userHash(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return toHex(new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(message))));
}

export interface Identity {
  /** true when `hash` is the HMAC of `value` */
  hashMatches(value: string, hash: string): Promise<boolean>;
  /** the digest that stands for person `field`=`value` of `site` inside tokens */
  subject(site: string, field: string, value: string): Promise<string>;
  /** a token proving `subjects` until now + ttl */
  issue(site: string, subjects: readonly string[], now: number): Promise<string>;
  /** the subjects of a valid, unexpired token of `site`; [] for anything else */
  read(site: string, token: string | undefined, now: number): Promise<string[]>;
}

/** At most this many people per token: one browser rarely speaks for more. */
const MAX_SUBJECTS = 4;

/** Identity checks under `secret`, issuing tokens valid for `ttlSeconds`. */
export function createIdentity(secret: string, ttlSeconds: number): Identity {
  const hmacKey = (bytes: BufferSource) => crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const userKey = hmacKey(encoder.encode(secret));
  // Tokens are signed with a key derived by SHA-256, not by HMAC under the secret: a site's server
  // hands out HMACs of strings a visitor chooses (user_hash of an external ID), so no token key may
  // be an HMAC of anything.
  const tokenKey = crypto.subtle.digest('SHA-256', encoder.encode(`cdp-edge identity token v1\u0000${secret}`)).then(hmacKey);
  const mac = async (key: Promise<CryptoKey>, message: string) => new Uint8Array(await crypto.subtle.sign('HMAC', await key, encoder.encode(message)));
  const sign = async (site: string, payload: string) => toBase64url(await mac(tokenKey, `token\n${site}\n${payload}`));

  return {
    async hashMatches(value, hash) {
      return timingSafeEqual(toHex(await mac(userKey, value)), hash.toLowerCase());
    },
    async subject(site, field, value) {
      return toBase64url((await mac(tokenKey, `subject\n${site}\n${field}\n${value}`)).slice(0, 16));
    },
    async issue(site, subjects, now) {
      const unique = [...new Set(subjects)].slice(-MAX_SUBJECTS);
      const payload = `v1.${Math.floor(now / 1000 + ttlSeconds).toString(36)}.${unique.join('~')}`;
      return `${payload}.${await sign(site, payload)}`;
    },
    async read(site, token, now) {
      if (typeof token !== 'string' || token.length > 1024) return [];
      const cut = token.lastIndexOf('.');
      if (cut < 0) return [];
      const payload = token.slice(0, cut);
      const [version, expiry, subjects] = payload.split('.');
      if (version !== 'v1' || expiry === undefined || subjects === undefined) return [];
      if (!timingSafeEqual(await sign(site, payload), token.slice(cut + 1))) return [];
      if (parseInt(expiry, 36) * 1000 <= now) return [];
      return subjects === '' ? [] : subjects.split('~');
    },
  };
}
