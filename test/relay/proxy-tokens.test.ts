/** Relay tokens: RELAY_TOKENS parsing, hashing, constant-time lookup, scopes, and `cdp-edge token create`. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli.js';
import tokenCommand from '../../src/cli/token.js';
import { createProxyRoutes } from '../../src/relay/proxy/index.js';
import { createTokenVerifier, hashToken, parseTokens, tokenAllows, TokenConfigError, type TokenConfig } from '../../src/relay/core/tokens.js';

const HASH = 'a'.repeat(64);

describe('parseTokens(RELAY_TOKENS)', () => {
  it('reads entries, lower-cases hashes, accepts /v1/ paths as endpoint IDs, and treats empty as no tokens', () => {
    expect(parseTokens(undefined)).toEqual([]);
    expect(parseTokens('  ')).toEqual([]);
    const tokens = parseTokens(
      JSON.stringify([{ name: 'crm', sha256: 'A'.repeat(64), scopes: ['read', 'write'], endpoints: ['/v1/person/get', 'person/merge'] }]),
    );
    expect(tokens).toEqual([{ name: 'crm', sha256: HASH, scopes: ['read', 'write'], endpoints: ['person/get', 'person/merge'] }]);
  });

  const bad: [string, RegExp][] = [
    ['not json', /RELAY_TOKENS is not valid JSON/],
    ['{"name":"x"}', /RELAY_TOKENS must be a JSON array/],
    ['[1]', /RELAY_TOKENS\[0\]: is not an object/],
    [
      `[{"name":"ok","sha256":"${HASH}","scopes":["read"]},{"name":"","sha256":"${HASH}","scopes":["read"]}]`,
      /RELAY_TOKENS\[1\]: name must be a non-empty string/,
    ],
    ['[{"name":"crm","sha256":"rt_plain_token","scopes":["read"]}]', /RELAY_TOKENS\[0\] \("crm"\): sha256 must be the 64 hex digits/],
    [`[{"name":"crm","sha256":"${HASH}","scopes":[]}]`, /RELAY_TOKENS\[0\] \("crm"\): scopes must be a non-empty array/],
    [`[{"name":"crm","sha256":"${HASH}","scopes":["read","superuser"]}]`, /unknown scope "superuser"/],
    [`[{"name":"crm","sha256":"${HASH}","scopes":["read"],"endpoints":["person/nope"]}]`, /unknown endpoint "person\/nope"/],
    [
      `[{"name":"crm","sha256":"${HASH}","scopes":["read"]},{"name":"crm","sha256":"${'b'.repeat(64)}","scopes":["read"]}]`,
      /RELAY_TOKENS\[1\]: name "crm" is already used by RELAY_TOKENS\[0\]/,
    ],
    [
      `[{"name":"a","sha256":"${HASH}","scopes":["read"]},{"name":"b","sha256":"${HASH}","scopes":["read"]}]`,
      /RELAY_TOKENS\[1\]: sha256 is the same as RELAY_TOKENS\[0\]'s/,
    ],
  ];
  for (const [json, message] of bad) {
    it(`refuses ${json.slice(0, 60)} with a TokenConfigError naming RELAY_TOKENS and the entry`, () => {
      expect(() => parseTokens(json)).toThrow(TokenConfigError);
      expect(() => parseTokens(json)).toThrow(message);
    });
  }

  it('refuses bad token options in createProxyRoutes the same way', () => {
    expect(() =>
      createProxyRoutes({ tokens: [{ name: 'x', sha256: 'short', scopes: ['read'] }], upstream: { baseUrl: 'http://127.0.0.1:1', apiKey: 'k' } }),
    ).toThrow(/tokens\[0\] \("x"\): sha256/);
    expect(() => createProxyRoutes({ tokens: [], upstream: { baseUrl: 'not a url', apiKey: 'k' } })).toThrow(/upstream.baseUrl/);
    expect(() => createProxyRoutes({ tokens: [], upstream: { baseUrl: 'http://127.0.0.1:1', apiKey: '' } })).toThrow(/upstream.apiKey/);
  });
});

describe('hashes and scopes', () => {
  it('hashes with SHA-256 as lower-case hex', async () => {
    // The SHA-256 test vector of "abc".
    expect(await hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('finds the token whose hash matches, and nothing for others', async () => {
    const tokens: TokenConfig[] = [
      { name: 'one', sha256: await hashToken('token-one'), scopes: ['read'] },
      { name: 'two', sha256: await hashToken('token-two'), scopes: ['write'] },
    ];
    const verify = createTokenVerifier(tokens);
    expect(verify('token-two')?.name).toBe('two');
    expect(verify('token-one')?.name).toBe('one');
    expect(verify('token-three')).toBeUndefined();
    expect(verify(tokens[0]!.sha256)).toBeUndefined();
    expect(verify('')).toBeUndefined();
  });

  it('recognises tokens whose configured hash was made by Web Crypto, for every length around the block boundaries', async () => {
    const hex = (bytes: ArrayBuffer) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');
    for (let length = 1; length <= 200; length++) {
      const presented = Array.from({ length }, (_, i) => String.fromCharCode(33 + ((i * 37 + length) % 90))).join('');
      const sha256 = hex(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(presented)));
      const verify = createTokenVerifier([{ name: `t${length}`, sha256, scopes: ['read'] }]);
      expect(verify(presented)?.name, `length ${length}`).toBe(`t${length}`);
      expect(verify(`${presented}x`), `length ${length} + 1`).toBeUndefined();
    }
  });

  it('grants by scope, admin grants all, and an endpoint list narrows', () => {
    const token = (scopes: TokenConfig['scopes'], endpoints?: TokenConfig['endpoints']): TokenConfig => ({
      name: 't',
      sha256: HASH,
      scopes,
      ...(endpoints ? { endpoints } : {}),
    });
    expect(tokenAllows(token(['read']), 'person/get')).toBe(true);
    expect(tokenAllows(token(['read']), 'person/merge')).toBe(false);
    expect(tokenAllows(token(['write']), 'person/delete')).toBe(false);
    expect(tokenAllows(token(['delete']), 'definitions/activity/delete')).toBe(true);
    expect(tokenAllows(token(['admin']), 'accounts/delete')).toBe(true);
    expect(tokenAllows(token(['admin'], ['person/get']), 'accounts/delete')).toBe(false);
  });
});

describe('cdp-edge token create', () => {
  afterEach(() => vi.restoreAllMocks());

  const run = async (argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((line: string) => void out.push(line));
    vi.spyOn(console, 'error').mockImplementation((line: string) => void err.push(line));
    const code = await tokenCommand.run(argv);
    vi.restoreAllMocks();
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  it('prints a new random token once and the RELAY_TOKENS entry holding only its hash', async () => {
    const { code, out } = await run(['create', '--name', 'crm-sync', '--scopes', 'read,write']);
    expect(code).toBe(0);
    const secret = /^\s+(rt_[A-Za-z0-9_-]{43})$/m.exec(out)?.[1];
    expect(secret).toBeDefined();
    const line = out.split('\n').find((l) => l.trim().startsWith('{'))!;
    const tokens = parseTokens(`[${line}]`);
    expect(tokens).toEqual([{ name: 'crm-sync', sha256: await hashToken(secret!), scopes: ['read', 'write'] }]);
    expect(line).not.toContain(secret);
    const again = await run(['create', '--name', 'crm-sync', '--scopes', 'read,write']);
    expect(again.out).not.toContain(secret);
  });

  it('prints {"token","entry"} with --json, honouring --endpoints', async () => {
    const { code, out } = await run(['create', '--name', 'reporting', '--scopes', 'read', '--endpoints', 'person/get,organizations/get', '--json']);
    expect(code).toBe(0);
    const { token, entry } = JSON.parse(out) as { token: string; entry: TokenConfig };
    expect(entry).toEqual({ name: 'reporting', sha256: await hashToken(token), scopes: ['read'], endpoints: ['person/get', 'organizations/get'] });
  });

  it('is registered as `cdp-edge token`', async () => {
    const out: string[] = [];
    vi.spyOn(console, 'log').mockImplementation((line: string) => void out.push(line));
    const code = await main(['token', 'create', '--name', 'via-cli', '--scopes', 'delete', '--json']);
    vi.restoreAllMocks();
    expect(code).toBe(0);
    const { token, entry } = JSON.parse(out.join('')) as { token: string; entry: TokenConfig };
    expect(entry).toEqual({ name: 'via-cli', sha256: await hashToken(token), scopes: ['delete'] });
  });

  it('exits 2 naming the problem for missing options, unknown scopes or endpoints', async () => {
    expect(await run(['create', '--scopes', 'read'])).toMatchObject({ code: 2, err: expect.stringContaining('--name required') });
    expect(await run(['create', '--name', 'x'])).toMatchObject({ code: 2, err: expect.stringContaining('--scopes required') });
    expect(await run(['create', '--name', 'x', '--scopes', 'read,root'])).toMatchObject({ code: 2, err: expect.stringContaining('unknown scope "root"') });
    expect(await run(['create', '--name', 'x', '--scopes', 'read', '--endpoints', 'person/nope'])).toMatchObject({
      code: 2,
      err: expect.stringContaining('person/nope'),
    });
    expect(await run(['revoke'])).toMatchObject({ code: 2 });
    expect(await run(['create', '--name', 'x', '--scopes', 'read', '--bogus'])).toMatchObject({ code: 2 });
  });
});
