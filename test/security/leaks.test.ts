// Attack: read what the relay gives away. The public /readyz named internal addresses and error
// text; schema errors quoted the values they refused (phone numbers among them) into debug log
// lines and onto the status page. Now the public port says only ready or not, the details go to
// the private metrics port and the log, and no message quotes a value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogLine } from '../../src/relay/core/logging.js';
import { collect, itemId, type Stack, startStack } from './support.js';

const PHONES = ['+44 20 7946 0958', '+999 5550 1234 567', '07946 095812'];
// What a leak would show: a number's distinctive groups standing alone (as written), or its digits
// run together (normalised). A group inside a longer run of digits is not a leak: the status page
// is full of millisecond timestamps, and 5550 is as likely as any four digits to turn up in one.
const GROUPS = ['7946', '0958', '5550', '095812'];
const RUNS = ['442079460958', '99955501234567', '07946095812', '447946095812'];
const leaks = (text: string): string[] => [
  ...GROUPS.filter((group) => new RegExp(`(?<![0-9])${group}(?![0-9])`).test(text)),
  ...RUNS.filter((run) => text.includes(run)),
];

describe('what the relay gives away', () => {
  let stack: Stack;
  const lines: LogLine[] = [];
  beforeAll(async () => {
    stack = await startStack({ env: { RELAY_LOG: 'debug' }, relay: { metricsPort: 0, platformFreshMs: 0, logger: (line) => void lines.push(line) } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('puts no phone number of a refused item in a log line or on the status page', async () => {
    const batch = [
      { id: itemId(), type: 'identify', fields: { 'str::email': PHONES[0] } },
      { id: itemId(), type: 'identify', fields: { 'str::email': 'p1@example.com', 'phn::phone': { phone: PHONES[1], parse_with_country_code: true } } },
      { id: itemId(), type: 'identify', fields: { 'str::email': 'p2@example.com', 'str::first': { nested: PHONES[2] } } },
      { id: itemId(), type: 'track', activity_id: 'act:cm:signed-up', attributes: { 'str:cm:plan': 447946095812 }, person: { 'str::email': 'p3@example.com' } },
      { id: itemId(), type: 'track', activity_id: 'act:cm:signed-up', attributes: { 'str:cm:phone': PHONES[0] }, person: { 'str::email': 'p4@example.com' } },
    ];
    const response = await collect(stack.relay.url, '203.0.113.20', batch);
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { results: { status: string; error?: string }[] };
    // the first three fail the schema at the relay; the last two go to the platform, which refuses them later
    expect(answer.results.slice(0, 3).map((result) => result.status)).toEqual(['rejected', 'rejected', 'rejected']);
    await stack.relay.drained({ timeoutMs: 10_000 });
    const page = await (await fetch(`${stack.relay.metricsUrl}/status`)).text();
    const json = await (await fetch(`${stack.relay.metricsUrl}/status.json`)).text();
    // the refusals are there, by field id
    expect(lines.some((line) => line.kind === 'item')).toBe(true);
    for (const [where, text] of [
      ['answer', JSON.stringify(answer)],
      ['log', lines.map((line) => JSON.stringify(line)).join('\n')],
      ['status page', page],
      ['status.json', json],
    ] as const) {
      expect(leaks(text), `${where} holds phone digits`).toEqual([]);
    }
  });

  it('answers the public /readyz with ready or not only; the reason goes to the metrics port and the log', async () => {
    expect(await (await fetch(`${stack.relay.url}/readyz`)).json()).toEqual({ ready: true });
    const platform = new URL(stack.emulator.url);
    await stack.emulator.close();
    const deadline = Date.now() + 10_000;
    let response = await fetch(`${stack.relay.url}/readyz`);
    while (response.status !== 503 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      response = await fetch(`${stack.relay.url}/readyz`);
    }
    expect(response.status).toBe(503);
    const text = await response.text();
    expect(JSON.parse(text)).toEqual({ ready: false });
    expect(text).not.toContain(platform.port);
    const detail = (await (await fetch(`${stack.relay.metricsUrl}/readyz`)).json()) as { ready: boolean; reason?: string };
    expect(detail.ready).toBe(false);
    expect(detail.reason).toMatch(/^platform: /);
    const logged = lines.filter((line) => line.kind === 'ready');
    expect(logged.at(-1)).toMatchObject({ level: 'warn', status: 503, error: 'not_ready' });
    expect(String(logged.at(-1)!['reason'])).toMatch(/^platform: /);
  });
});
