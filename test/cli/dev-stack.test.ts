// The pieces under `cdp-edge dev`: a default port that is taken moves to the next free one
// (and says so), a taken port chosen by flag is refused by name, and the demo server serves its
// pages with a strict CSP and nothing outside demo/.
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenOn, PortTakenError } from '../../src/demo/ports.js';
import { EMULATOR_KEY, startDevStack } from '../../src/demo/stack.js';
import { createClient } from '../../src/client/index.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDemoApp } from '../../src/demo/server.js';

let blocker: Server;
let taken: number;
beforeAll(async () => {
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  taken = (blocker.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => blocker.close(() => resolve())));

describe('ports', () => {
  it('a default port that is taken: the next free one is used and the move is noted', async () => {
    const stack = await startDevStack({ demoPort: { port: taken }, relayPort: { port: 0 }, emulatorPort: { port: 0 } });
    try {
      expect(stack.demo.port).toBeGreaterThan(taken);
      expect(stack.notes).toEqual([`port ${taken} is taken, so the demo site uses ${stack.demo.port}`]);
      expect((await fetch(`${stack.demo.url}/`)).status).toBe(200);
    } finally {
      await stack.close();
    }
  });

  it('a port chosen by flag that is taken is a PortTakenError naming the flag, tried once', async () => {
    const error = await startDevStack({ emulatorPort: { port: 0 }, demoPort: { port: 0 }, relayPort: { port: taken, flag: '--relay-port' } }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PortTakenError);
    expect((error as PortTakenError).message).toBe(
      `--relay-port ${taken} is already in use; stop what runs there, pick another port, or pass --relay-port 0 for any free port`,
    );
    // listenOn never retries an explicit port.
    let calls = 0;
    await expect(
      listenOn({ port: taken, flag: '--demo-port' }, 'demo site', async () => {
        calls++;
        throw Object.assign(new Error('busy'), { code: 'EADDRINUSE' });
      }),
    ).rejects.toThrow(PortTakenError);
    expect(calls).toBe(1);
    // Other failures are not taken for a busy port.
    await expect(
      listenOn({ port: 1234 }, 'relay', async () => {
        throw new Error('EACCES');
      }),
    ).rejects.toThrow('EACCES');
  });
});

describe('--data', () => {
  it('keeps the emulator state across runs: seeded once, then what arrived is still there', async () => {
    const data = join(mkdtempSync(join(tmpdir(), 'cdp-dev-data-')), 'emulator.json');
    const ports = { emulatorPort: { port: 0 }, relayPort: { port: 0 }, demoPort: { port: 0 }, data };
    const first = await startDevStack(ports);
    const client = createClient({ apiKey: EMULATOR_KEY, baseUrl: first.emulator!.url });
    await client.person.merge({ people: [{ fields: { 'str::email': 'kept@example.com' } }] });
    await first.close();
    const second = await startDevStack(ports); // would fail if it seeded the activity definitions again
    try {
      const people = second.emulator!.emulator.snapshot().people.map((p) => p.fields?.['str::email']);
      expect(people.sort()).toEqual(['ada@example.com', 'alan@example.com', 'grace@example.com', 'kept@example.com']);
    } finally {
      await second.close();
    }
  });
});

describe('the demo server', () => {
  const app = createDemoApp({
    config: () => ({ relay: 'http://127.0.0.1:8787', key: 'pk_demo', identitySecret: 'x'.repeat(32), dashboard: 'http://127.0.0.1:8790/' }),
  });

  it('serves the shop page with the script tag and a CSP that allows only its stub, itself and the relay', async () => {
    const response = await app.request('/');
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/=]+' http:\/\/127\.0\.0\.1:8787/);
    expect(csp).toContain("connect-src 'self' http://127.0.0.1:8787");
    expect(await response.text()).toContain('<script async src="http://127.0.0.1:8787/cdp.js"></script>');
  });

  it('answers client-side routes of the SPA with its page, and its config as a module', async () => {
    expect(await (await app.request('/spa/teas')).text()).toContain('/spa/app.js');
    expect(await (await app.request('/config.js')).text()).toBe(
      'export const relay = "http://127.0.0.1:8787";\nexport const key = "pk_demo";\nexport const dashboard = "http://127.0.0.1:8790/";\n',
    );
  });

  it('serves nothing outside demo/', async () => {
    for (const path of ['/../package.json', '/%2e%2e/package.json', '/spa/..%2f..%2fpackage.json', '/spa/../../package.json']) {
      expect((await app.request(path)).status, path).toBe(404);
    }
  });
});
