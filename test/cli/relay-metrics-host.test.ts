// `cdp-edge relay --metrics-host` / RELAY_METRICS_HOST: the metrics port on another address than
// loopback (a container's 0.0.0.0, so the port it exposes answers), for one process and for the
// primary of --workers; 127.0.0.1 when unset.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { start } from '../deploy/support.js';
import { ensureBuilt, root } from '../support/built.js';

beforeAll(ensureBuilt, 180_000);

/**
 * How long a relay may take to print its metrics address. Each case's own budget is twice that:
 * with the default 20 s for both, a start that came late on a loaded machine ended as a bare test
 * timeout (CI run of 2026-12-01, `--workers 2`), not as the helper's error with the relay's output.
 */
const WAIT_MS = 30_000;
const CASE_MS = 2 * WAIT_MS;

/**
 * Starts the relay with `args` and `env` (its metrics port `metricsPort`, a free one by default);
 * the metrics address it prints, what a scrape there answered, and what one of the same port on
 * 127.0.0.1 answered (a status, or the error), then stops it.
 */
async function metricsOf(args: string[], env: Record<string, string> = {}, metricsPort = 0) {
  const cwd = mkdtempSync(join(tmpdir(), 'cdp-metrics-host-'));
  const relay = start(process.execPath, [join(root, 'bin', 'cdp-edge.js'), 'relay', '--port', '0', '--metrics-port', String(metricsPort), ...args], {
    cwd,
    env: { PATH: process.env['PATH'] ?? '', CDP_API_KEY: 'k', RELAY_LOG: 'off', ...env },
  });
  try {
    const [, host, port] = (await relay.waitFor(/metrics on http:\/\/([\d.]+):(\d+)\/metrics/, WAIT_MS)) as unknown as [string, string, string];
    const scrape = (address: string) =>
      fetch(`http://${address}:${port}/metrics`).then(
        (response) => response.status,
        (error: Error) => String(error.cause ?? error),
      );
    return { host, asked: await scrape(host), loopback: host === '127.0.0.1' ? 200 : await scrape('127.0.0.1') };
  } finally {
    await relay.stop();
    rmSync(cwd, { recursive: true, force: true });
  }
}

describe('cdp-edge relay --metrics-host', () => {
  it(
    'serves the metrics port on the address RELAY_METRICS_HOST names, and only there',
    async () => {
      // The same port on 127.0.0.1 is held by a server of the test's own, answering 418: a relay that
      // bound the port on every address (or on loopback) could not start, and a scrape of 127.0.0.1
      // reaches that server, whatever other servers the run has (a port picked free for 127.0.0.3 alone
      // may be another process's on 127.0.0.1).
      const loopback: Server = createServer((_request, response) => response.writeHead(418).end());
      await new Promise<void>((resolve) => loopback.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = loopback.address() as AddressInfo;
        const seen = await metricsOf([], { RELAY_METRICS_HOST: '127.0.0.3' }, port);
        expect(seen.host).toBe('127.0.0.3');
        expect(seen.asked).toBe(200);
        expect(seen.loopback).toBe(418);
      } finally {
        await new Promise((resolve) => loopback.close(resolve));
      }
    },
    CASE_MS,
  );

  it(
    'takes --metrics-host too, and the primary of --workers serves there',
    async () => {
      const seen = await metricsOf(['--workers', '2', '--metrics-host', '127.0.0.4']);
      expect(seen.host).toBe('127.0.0.4');
      expect(seen.asked).toBe(200);
    },
    CASE_MS,
  );

  it(
    'stays on 127.0.0.1 when unset',
    async () => {
      expect((await metricsOf([])).host).toBe('127.0.0.1');
    },
    CASE_MS,
  );
});
