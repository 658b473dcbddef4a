// The send margin the relay learned, as operators see it: the gauge on /metrics and the figure on
// /status, from a real relay on an SQLite file delivering over HTTP to the emulator, which answers
// 429 when told to.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/relay/core/logging.js';
import { startRelay, type RunningRelay } from '../../src/relay/node.js';

const KEY = 'margin-metrics-key';
const ORIGIN = 'https://shop.example.com';
const SITE = { key: 'pk_margin', name: 'shop', origins: [ORIGIN], verify: 'open' };

describe('the send margin on /metrics and /status', () => {
  let emulator: RunningEmulator;
  let relay: RunningRelay;
  let dir: string;

  beforeAll(async () => {
    emulator = await startEmulator({ port: 0, key: KEY });
    dir = mkdtempSync(join(tmpdir(), 'cdp-edge-margin-'));
    relay = await startRelay({
      port: 0,
      metricsPort: 0,
      logger: silentLogger,
      stateFile: join(dir, 'state.db'),
      env: { CDP_API_KEY: KEY, CDP_BASE_URL: emulator.url, RELAY_SITES: JSON.stringify([SITE]), RELAY_DELIVERY_WAIT_MS: '0' },
    });
  });
  afterAll(async () => {
    await relay?.close();
    await emulator?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const identify = async (email: string) => {
    const batch = [{ id: crypto.randomUUID(), type: 'identify', fields: { 'str::email': email } }];
    const response = await fetch(`${relay.url}/collect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'text/plain' },
      body: JSON.stringify({ key: SITE.key, batch }),
    });
    expect(response.status).toBe(200);
  };
  const delivered = (email: string) => [...emulator.emulator.state.people.values()].some((person) => person.fields['str::email'] === email);
  const gauge = async () => {
    const text = await (await fetch(`${relay.metricsUrl}/metrics`)).text();
    const line = /^cdp_edge_platform_send_margin_ratio (\S+)$/m.exec(text);
    return line === null ? undefined : Number(line[1]);
  };
  /**
   * The gauge, `/status.json` and the page all read `ratio`, the page as `percent`: polled, since the
   * relay records a call once its answer is back, which may be after the emulator shows the person.
   */
  const expectMargin = async (ratio: number, percent: string) => {
    await expect.poll(gauge).toBe(ratio);
    await expect.poll(async () => ((await (await fetch(`${relay.metricsUrl}/status.json`)).json()) as { margin?: number }).margin).toBe(ratio);
    await expect.poll(async () => (await (await fetch(`${relay.metricsUrl}/status`)).text()).includes(`send margin ${percent}`)).toBe(true);
  };
  const merges429 = () => emulator.emulator.calls()['person/merge']?.statuses?.['429'] ?? 0;

  it('reads the base 3% while the platform never answers 429', async () => {
    await identify('margin-a@example.com');
    await expect.poll(() => delivered('margin-a@example.com'), { timeout: 10_000 }).toBe(true);
    expect(merges429()).toBe(0);
    await expectMargin(0.03, '3%');
  });

  it('reads the widened 6% once the platform answered 429, and keeps it after the call went through', async () => {
    emulator.emulator.setFaults({ 'person/merge': { status: 429 } });
    await identify('margin-b@example.com');
    // One hold: the faults end before the key's 1 s hold does, so the merge's next try goes through.
    await expect.poll(merges429, { timeout: 10_000, interval: 10 }).toBe(1);
    emulator.emulator.setFaults({});
    await expect.poll(() => delivered('margin-b@example.com'), { timeout: 10_000 }).toBe(true);
    expect(merges429()).toBe(1);
    await expectMargin(0.06, '6%');
  });
});
