import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createIdentity, timingSafeEqual, userHash } from '../../src/relay/ingest/identity.js';

const SECRET = 'a-secret-of-enough-length';

describe('identity verification', () => {
  it('computes user_hash as the hex HMAC-SHA256 a site server computes with its own tools', async () => {
    const expected = createHmac('sha256', SECRET).update('ann@example.com').digest('hex');
    expect(await userHash(SECRET, 'ann@example.com')).toBe(expected);
    const identity = createIdentity(SECRET, 60);
    expect(await identity.hashMatches('ann@example.com', expected)).toBe(true);
    expect(await identity.hashMatches('ann@example.com', expected.toUpperCase())).toBe(true);
    expect(await identity.hashMatches('bob@example.com', expected)).toBe(false);
    expect(await identity.hashMatches('ann@example.com', expected.slice(0, 63))).toBe(false);
  });

  it('compares strings fully, whatever their lengths', () => {
    expect(timingSafeEqual('abc', 'abc')).toBe(true);
    expect(timingSafeEqual('abc', 'abd')).toBe(false);
    expect(timingSafeEqual('abc', 'ab')).toBe(false);
    expect(timingSafeEqual('', '')).toBe(true);
    expect(timingSafeEqual('a', '')).toBe(false);
  });

  it('issues tokens that prove their subjects for their site until they expire', async () => {
    const identity = createIdentity(SECRET, 3600);
    const now = Date.UTC(2026, 10, 23, 9);
    const subject = await identity.subject('pk_a', 'str::email', 'ann@example.com');
    const token = await identity.issue('pk_a', [subject], now);
    expect(token).not.toContain('ann');
    expect(await identity.read('pk_a', token, now + 1000)).toEqual([subject]);
    expect(await identity.read('pk_a', token, now + 3600_000)).toEqual([]);
    expect(await identity.read('pk_b', token, now)).toEqual([]);
    expect(await createIdentity('another-secret-entirely', 3600).read('pk_a', token, now)).toEqual([]);
    const [version, expiry, subjects, signature] = token.split('.');
    const stretched = `${version}.${(parseInt(expiry!, 36) + 100000).toString(36)}.${subjects}.${signature}`;
    expect(await identity.read('pk_a', stretched, now)).toEqual([]);
    expect(await identity.read('pk_a', 'garbage', now)).toEqual([]);
    expect(await identity.read('pk_a', undefined, now)).toEqual([]);
  });
});

describe('identity tokens cannot be forged from user hashes', () => {
  it('signs with a key no user_hash reveals, even for strings shaped like token payloads', async () => {
    const identity = createIdentity(SECRET, 3600);
    const now = Date.UTC(2026, 10, 23, 9);
    const subject = await identity.subject('pk_a', 'str::email', 'victim@example.com');
    const payload = `v1.${Math.floor(now / 1000 + 3600).toString(36)}.${subject}`;
    // A site server would hand out HMACs of these if a visitor chose them as an external ID.
    for (const chosen of [`token\npk_a\n${payload}`, `identity-token\npk_a\n${payload}`, payload]) {
      const hex = await userHash(SECRET, chosen);
      const b64 = Buffer.from(hex, 'hex').toString('base64url');
      expect(await identity.read('pk_a', `${payload}.${b64}`, now)).toEqual([]);
    }
  });
});
