/** What the `cdp-edge outbox` tests share: the CLI run in this process, and an outbox with dead letters. */
import { vi } from 'vitest';
import { main } from '../../src/cli.js';
import type { OutboxStore } from '../../src/relay/state/outbox.js';
import { item } from '../relay/suite/outbox-suite.js';

/** Runs `cdp-edge outbox …` in this process; resolves to its exit code and what it printed. */
export const cli = (...argv: string[]) => command('outbox', ...argv);

/** Runs `cdp-edge <name> …` in this process; resolves to its exit code and what it printed. */
export async function command(name: string, ...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((line: unknown) => void out.push(String(line)));
  const error = vi.spyOn(console, 'error').mockImplementation((line: unknown) => void err.push(String(line)));
  try {
    const code = await main([name, ...argv]);
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

/** Three dead letters (two sites) and one pending entry, failed 2 hours ago. */
export async function seed(store: OutboxStore): Promise<number[]> {
  const now = Date.now();
  await store.outbox.accept([item('shop', 'a1'), item('blog', 'b1', { kind: 'merge' }), item('shop', 'a2'), item('shop', 'live')], now, 3600_000);
  const leased = await store.outbox.lease('deliverer', 3, now, 60_000);
  await store.outbox.settle(
    'deliverer',
    {
      delivered: [],
      released: [],
      dead: [
        { seq: leased[0]!.seq, reason: 'invalid_field', status: 400 },
        { seq: leased[1]!.seq, reason: 'ambiguous', status: 504 },
        { seq: leased[2]!.seq, reason: 'unknown_activity', status: 422 },
      ],
    },
    now - 2 * 3600_000,
  );
  return leased.map((entry) => entry.seq);
}
