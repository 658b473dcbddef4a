/**
 * `cdp-edge/next` and `cdp-edge/next/server` without a Next build: the rewrites `withCdpEdge`
 * adds beside a config's own (array or object form), what it refuses, and `userHashFor`'s hashes,
 * which are the relay's `identityHash` of each identifier and nothing else. test/next/next.test.ts
 * runs them in a built Next app.
 */
import { describe, expect, it } from 'vitest';
import { userHashFor } from '../../src/next/server.js';
import { withCdpEdge } from '../../src/next/index.js';
import { identityHash } from '../../src/relay/index.js';

const relay = 'https://relay.internal:8787';
const ours = [
  { source: '/t/collect', destination: `${relay}/collect` },
  { source: '/t/cdp.js', destination: `${relay}/cdp.js` },
];

describe('withCdpEdge', () => {
  it('adds /t/collect and /t/cdp.js ahead of the app’s routes and keeps every other setting', async () => {
    const config = withCdpEdge({ reactStrictMode: true }, { relay });
    expect(config.reactStrictMode).toBe(true);
    expect(await config.rewrites()).toEqual({ beforeFiles: ours, afterFiles: [], fallback: [] });
  });

  it('keeps the config’s own rewrites, in either form', async () => {
    const theirs = { source: '/old', destination: '/new' };
    expect(await withCdpEdge({ rewrites: async () => [theirs] }, { relay }).rewrites()).toEqual({ beforeFiles: ours, afterFiles: [theirs], fallback: [] });
    expect(await withCdpEdge({ rewrites: () => ({ beforeFiles: [theirs], fallback: [theirs] }) }, { relay }).rewrites()).toEqual({
      beforeFiles: [...ours, theirs],
      fallback: [theirs],
    });
  });

  it('takes another folder and the relay’s own paths', async () => {
    const config = withCdpEdge({}, { relay: `${relay}/`, path: 'x/y/', collectPath: '/in', scriptPath: '/s.js' });
    expect((await config.rewrites()).beforeFiles).toEqual([
      { source: '/x/y/collect', destination: `${relay}/in` },
      { source: '/x/y/cdp.js', destination: `${relay}/s.js` },
    ]);
  });

  it('refuses a relay that is not an absolute http(s) address, and the site’s root as the folder', () => {
    expect(() => withCdpEdge({}, { relay: '/t' })).toThrow(/absolute http\(s\) address/);
    expect(() => withCdpEdge({}, { relay: 'ftp://relay' })).toThrow(/http\(s\)/);
    expect(() => withCdpEdge({}, { relay, path: '/' })).toThrow(/folder/);
  });
});

describe('userHashFor', () => {
  const secret = 'next-config-test-secret';

  it('hashes each identifier the person names as the relay checks it, and no other field', async () => {
    const user = { 'str::email': 'ann@example.com', 'str::ei': 'u-42', 'str::first': 'Ann' };
    expect(await userHashFor(user, secret)).toEqual({
      'str::email': await identityHash(secret, 'str::email', 'ann@example.com'),
      'str::ei': await identityHash(secret, 'str::ei', 'u-42'),
    });
  });

  it('reads RELAY_IDENTITY_SECRET, and says so when it is not set', async () => {
    const before = process.env['RELAY_IDENTITY_SECRET'];
    try {
      process.env['RELAY_IDENTITY_SECRET'] = secret;
      expect(await userHashFor({ 'str::email': 'ann@example.com' })).toEqual({ 'str::email': await identityHash(secret, 'str::email', 'ann@example.com') });
      delete process.env['RELAY_IDENTITY_SECRET'];
      await expect(userHashFor({ 'str::email': 'ann@example.com' })).rejects.toThrow(/RELAY_IDENTITY_SECRET is not set/);
    } finally {
      if (before === undefined) delete process.env['RELAY_IDENTITY_SECRET'];
      else process.env['RELAY_IDENTITY_SECRET'] = before;
    }
  });

  it('refuses a person with no identifier: there is nothing to prove', async () => {
    await expect(userHashFor({ 'str::first': 'Ann' }, secret)).rejects.toThrow(/names no identifier/);
  });
});
