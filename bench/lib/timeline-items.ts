/**
 * Items as /collect accepts them, for the diagnoses that feed the outbox directly (pace-timeline,
 * call-commits), and the platform they drain to: item `n` of a stream from 500 browsers in turn, 7% of them identifies. Each
 * visitor's 14 items begin with its identify, then a new visitor takes the browser's place.
 */
import type { OutboxItem } from '../../src/relay/state/outbox.js';
import { type CliProcess, startCli } from './cli.js';

/** Item `n` of the stream, accepted at `now`; its tracks are of activity `activity` (defined at the platform). */
export const timelineItem =
  (activity: string) =>
  (n: number, now: number): OutboxItem => {
    const turn = Math.floor(n / 500);
    const visitor = (n % 500) + 500 * Math.floor(turn / 14);
    const email = `v${visitor}@bench.example.com`;
    const base = { site: 'pk_bench', id: crypto.randomUUID(), browser: `b${visitor}`, visitor: `10.0.${visitor & 255}`, accepted: now };
    if (turn % 14 === 0) return { ...base, kind: 'merge', entry: { fields: { 'str::email': email } } };
    return { ...base, kind: 'activity', entry: { activity_id: `act:cm:${activity}`, fields: { 'str::email': email }, attributes: { 'str:cm:item': base.id } } };
  };

/**
 * The built emulator as those diagnoses drain to (`cdp-edge emulator --rate-limit <rate>
 * --latency-ms 50`, a child process), with `activity` defined. The definition call opened the
 * platform's window and counts in it (the deliverer's first `rate` calls inside the same second
 * would draw a 429), so it resolves once that window has ended.
 */
export async function startTimelinePlatform(key: string, rate: number, activity: string): Promise<CliProcess> {
  const emulator = await startCli(['emulator', '--port', '0', '--key', key, '--rate-limit', String(rate), '--latency-ms', '50']);
  try {
    const defined = await fetch(`${emulator.url}/v1/definitions/activity/create`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ name: activity, attributes: [{ name: 'item', display_type: 'text' }] }),
    });
    if (!defined.ok) throw new Error(`defining act:cm:${activity}: ${defined.status} ${await defined.text()}`);
  } catch (error) {
    await emulator.stop();
    throw error;
  }
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  return emulator;
}
