import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createIdentity, type Hmac, identityHash, SIGNATURES_KEPT, timingSafeEqual, userHash } from '../../src/relay/ingest/identity.js';
import { nodeHmac } from '../../src/relay/node.js';

const SECRET = 'a-secret-of-enough-length';

describe('identity verification', () => {
  it('computes user_hash as the hex HMAC-SHA256 of field, newline, value that a site server computes with its own tools', async () => {
    const expected = createHmac('sha256', SECRET).update('str::email\nann@example.com').digest('hex');
    expect(await identityHash(SECRET, 'str::email', 'ann@example.com')).toBe(expected);
    const identity = createIdentity(SECRET, 60);
    expect(await identity.proves('str::email', 'ann@example.com', expected)).toBe(true);
    expect(await identity.proves('str::email', 'ann@example.com', expected.toUpperCase())).toBe(true);
    expect(await identity.proves('str::email', 'bob@example.com', expected)).toBe(false);
    expect(await identity.proves('str::email', 'ann@example.com', expected.slice(0, 63))).toBe(false);
    // bound to its field: the same string as an external ID is another proof
    expect(await identity.proves('str::ei', 'ann@example.com', expected)).toBe(false);
    expect(() => identityHash(SECRET, 'str::email\nx', 'ann@example.com')).toThrow(/field ID/);
  });

  it('accepts the value-only hash of earlier versions only when legacy hashes are switched on', async () => {
    const legacy = createHmac('sha256', SECRET).update('ann@example.com').digest('hex');
    expect(await userHash(SECRET, 'ann@example.com')).toBe(legacy);
    expect(await createIdentity(SECRET, 60).provesLegacy('ann@example.com', legacy)).toBe(false);
    expect(await createIdentity(SECRET, 60, { legacyHash: true }).provesLegacy('ann@example.com', legacy)).toBe(true);
    expect(await createIdentity(SECRET, 60, { legacyHash: true }).proves('str::email', 'ann@example.com', legacy)).toBe(false);
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

describe('a returning browser costs no HMAC for its token', () => {
  it('reads a token it issued or read lately, and hands back the same, without an HMAC; every check stays as strict', async () => {
    let macs = 0;
    const counted: Hmac = (key, message) => {
      macs++;
      return nodeHmac(key, message);
    };
    const identity = createIdentity(SECRET, 3600, { hmac: counted });
    const now = Date.UTC(2026, 10, 23, 9);
    const subject = await identity.subject('pk_a', 'str::email', 'ann@example.com');
    const token = await identity.issue('pk_a', [subject], now);
    const opened = await identity.open('pk_a', token, now + 1000);
    expect(opened?.subjects).toEqual([subject]);
    // What the relay does with a browser's later batch: read its token, hand back one with the same expiry.
    macs = 0;
    for (let batch = 0; batch < 3; batch++) {
      const read = await identity.open('pk_a', token, now + 2000 + batch);
      expect(read).toEqual(opened);
      expect(await identity.issue('pk_a', read!.subjects, now + 2000 + batch, read!.expires)).toBe(token);
    }
    expect(macs).toBe(0);
    // As strict: another signature, another site, a stretched expiry, an expired token.
    const [version, expiry, subjects, signature] = token.split('.');
    const other = `${signature!.slice(0, -1)}${signature!.endsWith('A') ? 'B' : 'A'}`;
    expect(await identity.read('pk_a', `${version}.${expiry}.${subjects}.${other}`, now)).toEqual([]);
    expect(await identity.read('pk_b', token, now)).toEqual([]);
    expect(await identity.read('pk_a', `${version}.${(parseInt(expiry!, 36) + 100).toString(36)}.${subjects}.${signature}`, now)).toEqual([]);
    expect(await identity.read('pk_a', token, now + 3600_000)).toEqual([]);
    // Kept for the latest SIGNATURES_KEPT tokens only: past them, a read signs again.
    for (let n = 0; n < SIGNATURES_KEPT; n++) await identity.issue('pk_a', [`s${n}`], now);
    macs = 0;
    expect(await identity.read('pk_a', token, now)).toEqual([subject]);
    expect(macs).toBe(1);
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
      for (const hex of [await identityHash(SECRET, 'str::ei', chosen), await userHash(SECRET, chosen)]) {
        const b64 = Buffer.from(hex, 'hex').toString('base64url');
        expect(await identity.read('pk_a', `${payload}.${b64}`, now)).toEqual([]);
      }
    }
  });
});

describe('the HMAC implementation is injectable', () => {
  it("node:crypto's (the Node entry's) and Web Crypto's (Workers') agree: same proofs, each reads the other's tokens", async () => {
    const web = createIdentity(SECRET, 3600);
    const node = createIdentity(SECRET, 3600, { hmac: nodeHmac });
    const now = Date.UTC(2026, 10, 23, 9);
    const hash = await identityHash(SECRET, 'str::email', 'ann@example.com');
    expect(await node.proves('str::email', 'ann@example.com', hash)).toBe(true);
    expect(await node.proves('str::ei', 'ann@example.com', hash)).toBe(false);
    const subject = await node.subject('pk_a', 'str::email', 'ann@example.com');
    expect(subject).toBe(await web.subject('pk_a', 'str::email', 'ann@example.com'));
    expect(await web.read('pk_a', await node.issue('pk_a', [subject], now), now)).toEqual([subject]);
    expect(await node.read('pk_a', await web.issue('pk_a', [subject], now), now)).toEqual([subject]);
    expect(await node.read('pk_b', await web.issue('pk_a', [subject], now), now)).toEqual([]);
  });
});
