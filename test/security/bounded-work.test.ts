// Attack: one /collect whose field ids are huge (50 KB, 500 KB): on the old relay the log
// scrubber's regex backtracked over the echoed key for seconds to minutes, blocking the event loop
// for every visitor. Every key, id and message is now bounded before any work, and the scrubber is
// linear whatever the text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogLine } from '../../src/relay/core/logging.js';
import { scrub } from '../../src/relay/core/logging.js';
import { itemId, ORIGIN, SITE, type Stack, startStack } from './support.js';

/** CPU time this process spent since `from` (process.cpuUsage()), in ms: what a machine busy with other processes does not add to. */
const cpuMsSince = (from: NodeJS.CpuUsage) => {
  const { user, system } = process.cpuUsage(from);
  return (user + system) / 1000;
};

describe('a /collect with huge field ids', () => {
  let stack: Stack;
  const lines: LogLine[] = [];
  beforeAll(async () => {
    stack = await startStack({ env: { RELAY_LOG: 'debug' }, relay: { logger: (line) => void lines.push(line) } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const post = (batch: unknown[]) =>
    fetch(`${stack.relay.url}/collect`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain', origin: ORIGIN },
      body: JSON.stringify({ key: SITE, batch }),
    });

  // An email-like key is what made the old scrubber backtrack: "a.a.a…@" never finds its domain.
  const key = (bytes: number) => `str::${'a.'.repeat(bytes / 2)}`;
  const cases = [
    ['a 50 KB person field id', () => [{ id: itemId(), type: 'identify', fields: { [key(50_000)]: 'x', 'str::email': 'big@example.com' } }]],
    ['a 500 KB person field id', () => [{ id: itemId(), type: 'identify', fields: { [key(500_000)]: 'x' } }]],
    ['a 500 KB attribute id', () => [{ id: itemId(), type: 'track', activity_id: 'act:cm:signed-up', attributes: { [key(500_000)]: 1 } }]],
    ['a 500 KB activity id', () => [{ id: itemId(), type: 'track', activity_id: `act:cm:${'b@'.repeat(250_000)}` }]],
    ['a 500 KB item id', () => [{ id: `${'c.'.repeat(250_000)}@`, type: 'identify', fields: { 'str::email': 'id@example.com' } }]],
  ] as const;

  it.each(cases)('answers %s at once with the item rejected, and /healthz answers meanwhile', async (_, batch) => {
    // The relay, the platform and this client share this process: the CPU time it spent on the
    // request is the relay's work (the old scrubber's backtracking took seconds of it), while a
    // loaded machine adds wall time to every request alike (386 ms for this one at load 20).
    const cpu = process.cpuUsage();
    const health = (async () => {
      // sent while the big request is being handled: answered without waiting for it
      await new Promise((resolve) => setTimeout(resolve, 5));
      return (await fetch(`${stack.relay.url}/healthz`)).status;
    })();
    // Settled either way, so a failed check below leaves no rejection behind.
    health.catch(() => {});
    const response = await post(batch() as unknown[]);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { results: { id: string; status: string; error?: string }[] };
    expect(body.results).toHaveLength(1);
    expect(body.results[0]!.status).toBe('rejected');
    // nothing long comes back: not the key, not the id
    expect(JSON.stringify(body).length).toBeLessThan(1_000);
    expect(await health).toBe(200);
    // The request and /healthz beside it, in CPU: a loop held that long is what a visitor would wait.
    expect(cpuMsSince(cpu)).toBeLessThan(250);
    // and nothing long went into the logs
    expect(Math.max(...lines.map((line) => JSON.stringify(line).length))).toBeLessThan(2_000);
  });

  it('has a scrubber linear in its text', () => {
    for (const text of ['a.'.repeat(250_000), '@'.repeat(500_000), 'a@'.repeat(250_000), '1 '.repeat(250_000), 'f'.repeat(500_000)]) {
      const cpu = process.cpuUsage();
      scrub(text);
      expect(cpuMsSince(cpu)).toBeLessThan(200);
    }
    expect(scrub('ann@example.com, rt_abcdefghijklmnopqrst and +44 20 7946 0958 at 2026-11-22T10:00:00Z')).toBe(
      '[email], [token] and [phone] at 2026-11-22T10:00:00Z',
    );
  });
});
