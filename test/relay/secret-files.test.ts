// Secrets from files, as container platforms mount them (`CDP_API_KEY_FILE=/run/secrets/…`): the
// relay reads the file in place of the variable, and every way it can go wrong names the `_FILE`
// variable at fault without ever printing the secret.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RelayConfigError } from '../../src/relay/core/errors.js';
import { silentLogger } from '../../src/relay/core/logging.js';
import { withSecretFiles } from '../../src/relay/node/env.js';
import { startRelay } from '../../src/relay/node.js';
import { startUpstreamStack, UPSTREAM_KEY, type UpstreamStack } from './support/stack.js';
import { upstreamControl } from './support/control.js';

const ORIGIN = 'https://shop.example.com';
const dir = mkdtempSync(join(tmpdir(), 'cdp-secret-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fileWith = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

/** The error `fn` throws (a RelayConfigError), for its variable and message. */
function configError(fn: () => unknown): RelayConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(RelayConfigError);
    return error as RelayConfigError;
  }
  throw new Error('no error thrown');
}

describe('secrets from files', () => {
  it('reads each secret from its _FILE, dropping the one line break an editor or echo leaves', () => {
    const env = withSecretFiles({
      CDP_API_KEY_FILE: fileWith('key', 'the-key\n'),
      RELAY_IDENTITY_SECRET_FILE: fileWith('identity', 'hmac secret  \r\n'),
      RELAY_REDIS_URL_FILE: fileWith('redis', 'redis://:pass@redis:6379'),
      RELAY_TOKENS_FILE: fileWith('tokens', '[{"name":"ops","sha256":"ab","scopes":["people:read"]}]\n'),
      RELAY_SITES: '[]',
    });
    expect(env).toMatchObject({
      CDP_API_KEY: 'the-key',
      RELAY_IDENTITY_SECRET: 'hmac secret  ',
      RELAY_REDIS_URL: 'redis://:pass@redis:6379',
      RELAY_TOKENS: '[{"name":"ops","sha256":"ab","scopes":["people:read"]}]',
      RELAY_SITES: '[]',
    });
  });

  it('leaves the environment as it is when no _FILE is set', () => {
    const env = { CDP_API_KEY: 'inline', RELAY_SITES: '[]' };
    expect(withSecretFiles(env)).toBe(env);
  });

  it('names the _FILE variable when its file is missing, unreadable or empty, never the secret', () => {
    const missing = configError(() => withSecretFiles({ CDP_API_KEY_FILE: join(dir, 'no-such-file') }));
    expect(missing.variable).toBe('CDP_API_KEY_FILE');
    expect(missing.message).toMatch(/^CDP_API_KEY_FILE: cannot read .*no-such-file: ENOENT$/);

    const empty = configError(() => withSecretFiles({ RELAY_IDENTITY_SECRET_FILE: fileWith('empty', '\n') }));
    expect(empty.variable).toBe('RELAY_IDENTITY_SECRET_FILE');
    expect(empty.message).toMatch(/is empty$/);

    // A directory where the file should be (a mount gone wrong) is unreadable too.
    const folder = configError(() => withSecretFiles({ RELAY_REDIS_URL_FILE: dir }));
    expect(folder.variable).toBe('RELAY_REDIS_URL_FILE');
    expect(folder.message).toMatch(/EISDIR/);
  });

  it('refuses a secret set both inline and from a file, naming both', () => {
    const both = configError(() => withSecretFiles({ CDP_API_KEY: 'inline-secret', CDP_API_KEY_FILE: fileWith('both', 'file-secret') }));
    expect(both.variable).toBe('CDP_API_KEY_FILE');
    expect(both.message).toBe('CDP_API_KEY_FILE: both CDP_API_KEY and CDP_API_KEY_FILE are set; keep one');
    expect(both.message).not.toMatch(/inline-secret|file-secret/);
  });
});

describe('a relay started with CDP_API_KEY_FILE', () => {
  let stack: UpstreamStack;
  beforeAll(async () => {
    stack = await startUpstreamStack();
  });
  afterAll(() => stack?.close());

  it('calls the platform with the key from the file', async () => {
    const relay = await startRelay({
      port: 0,
      logger: silentLogger,
      snippet: '',
      env: {
        CDP_API_KEY_FILE: fileWith('platform-key', `${UPSTREAM_KEY}\n`),
        CDP_BASE_URL: stack.url,
        RELAY_SITES: JSON.stringify([{ key: 'pk_file', origins: [ORIGIN], verify: 'off' }]),
      },
    });
    try {
      const upstream = upstreamControl(stack.url);
      await upstream.reset();
      const item = { id: crypto.randomUUID(), type: 'identify', fields: { 'str::email': 'file-key@example.com' } };
      const response = await fetch(`${relay.url}/collect`, {
        method: 'POST',
        headers: { origin: ORIGIN, 'content-type': 'text/plain' },
        body: JSON.stringify({ key: 'pk_file', batch: [item] }),
      });
      expect((await response.json()).results[0].status).toBe('accepted');
      await relay.drained();
      const calls = (await upstream.received()).filter((call) => call.path.startsWith('/v1/'));
      expect(calls.length).toBeGreaterThan(0);
      expect(calls.map((call) => call.headers['x-api-key'])).toEqual(calls.map(() => UPSTREAM_KEY));
    } finally {
      await relay.close();
    }
  });

  it('does not start when the file cannot be read, and says which variable', async () => {
    const env = { CDP_API_KEY_FILE: join(dir, 'absent-key'), RELAY_SITES: '[]' };
    await expect(startRelay({ port: 0, logger: silentLogger, snippet: '', env })).rejects.toThrow(/^CDP_API_KEY_FILE: cannot read/);
  });
});
