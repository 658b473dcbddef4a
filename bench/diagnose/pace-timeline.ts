/**
 * Diagnostic: where the deliverer's time goes between two platform calls. The real deliverer
 * (SQLite outbox in a temporary file, the key's pacer, the spacer, undici) drains to the built
 * emulator (`cdp-edge emulator --rate-limit <rate> --latency-ms 50`, a child process) while items
 * are accepted into the outbox at an offered rate, as /collect would, 7% of them identifies.
 * Every outbox step (lease, sending, settle), every pacer grant and every platform call is
 * timed, and the tool prints calls per second against the key's rate, what each step costs, and
 * the gaps between calls leaving longer than the key's spacing, with what was running in each.
 *
 *   npm run build && npx tsx bench/diagnose/pace-timeline.ts [--rate 30] [--offer 4000] [--seconds 10]
 *
 * Prints only; writes nothing. Read figures with the load average it prints.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { systemClock } from '../../src/relay/core/clock.js';
import { createUpstream, type Upstream } from '../../src/relay/deliver/caller.js';
import { createDeliverer } from '../../src/relay/deliver/deliverer.js';
import { createUndiciTransport } from '../../src/relay/deliver/undici.js';
import type { Outbox, Pacer } from '../../src/relay/state/outbox.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { startCli } from '../lib/cli.js';
import { timelineItem } from '../lib/timeline-items.js';

const { values } = parseArgs({
  options: { rate: { type: 'string', default: '30' }, offer: { type: 'string', default: '4000' }, seconds: { type: 'string', default: '10' } },
});
const RATE = Number(values.rate);
const OFFER = Number(values.offer);
const SECONDS = Number(values.seconds);
const KEY = 'bench-platform-key';
const ACTIVITY = 'bench-view';

interface Step {
  step: string;
  start: number;
  end: number;
}
const steps: Step[] = [];
/** Times every call of `target`'s methods named in `names`. */
function timed<T extends object>(target: T, names: readonly string[], label = (name: string, _args: unknown[]) => name): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver);
      if (typeof value !== 'function' || !names.includes(String(property))) return value;
      return async (...args: unknown[]) => {
        const start = performance.now();
        try {
          return await value.apply(object, args);
        } finally {
          steps.push({ step: label(String(property), args), start, end: performance.now() });
        }
      };
    },
  });
}

const dir = mkdtempSync(join(tmpdir(), 'cdp-pace-timeline-'));
const emulator = await startCli(['emulator', '--port', '0', '--key', KEY, '--rate-limit', String(RATE), '--latency-ms', '50']);
try {
  await fetch(`${emulator.url}/v1/definitions/activity/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': KEY },
    body: JSON.stringify({ name: ACTIVITY, attributes: [{ name: 'item', display_type: 'text' }] }),
  });
  const store = await createSqliteOutbox(join(dir, 'state.db'));
  const outbox = timed<Outbox>(store.outbox, ['lease', 'sending', 'settle', 'lead']);
  const pacer = timed<Pacer>(store.pacer(RATE), ['take'], (_, args) => `take:${args[1]}`);
  const upstream: Upstream = timed(
    createUpstream({ baseUrl: emulator.url, apiKey: KEY, transport: createUndiciTransport(), timeoutMs: 10_000, backoff: { until: 0 }, now: Date.now }),
    ['call'],
    (_, args) => `call:${(args[0] as { id: string }).id}`,
  );
  const deliverer = createDeliverer({ outbox, pacer, upstream, clock: systemClock, sites: new Map(), ambiguous: 'hold', waitMs: 100, rate: RATE });
  deliverer.start();

  // Items as /collect accepts them (bench/lib/timeline-items.ts): every 10 ms, what is due.
  let made = 0;
  const item = timelineItem(ACTIVITY);
  const started = performance.now();
  while (performance.now() - started < SECONDS * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * OFFER);
    if (due > made) {
      const now = Date.now();
      const batch = Array.from({ length: due - made }, (_, i) => item(made + i, now));
      made = due;
      await outbox.accept(batch, now, 86_400_000);
      deliverer.kick(batch.length);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const ended = performance.now();
  await deliverer.stop();
  await store.close();

  const calls = steps.filter((s) => s.step.startsWith('call:') && s.start >= started && s.start <= ended).sort((a, b) => a.start - b.start);
  const span = (calls.at(-1)!.start - calls[0]!.start) / 1000;
  console.log(
    `load average ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}; offered ${OFFER} items/s for ${SECONDS} s to a key of ${RATE} calls/s`,
  );
  console.log(`calls: ${calls.length} in ${span.toFixed(2)} s = ${((calls.length - 1) / span).toFixed(1)} calls/s (allowed ${RATE})`);
  const byStep = new Map<string, number[]>();
  for (const s of steps) byStep.set(s.step, [...(byStep.get(s.step) ?? []), s.end - s.start]);
  for (const [step, ms] of [...byStep].sort()) {
    ms.sort((a, b) => a - b);
    const at = (p: number) => ms[Math.min(ms.length - 1, Math.floor((ms.length * p) / 100))]!.toFixed(1);
    console.log(
      `  ${step.padEnd(28)} n=${String(ms.length).padStart(5)}  p50 ${at(50).padStart(7)} ms  p90 ${at(90).padStart(7)} ms  max ${at(100).padStart(7)} ms`,
    );
  }
  const interval = 1000 / RATE;
  let lost = 0;
  const gaps: string[] = [];
  for (let i = 1; i < calls.length; i++) {
    const gap = calls[i]!.start - calls[i - 1]!.start;
    if (gap <= interval * 1.1) continue;
    lost += gap - interval * 1.02;
    const from = calls[i - 1]!.start;
    const to = calls[i]!.start;
    const during = steps
      .filter((s) => s.start < to && s.end > from && !s.step.startsWith('take'))
      .map((s) => `${s.step} ${(s.start - from).toFixed(0)}→${(s.end - from).toFixed(0)}`);
    gaps.push(`  +${(from - started).toFixed(0)} ms: ${gap.toFixed(0)} ms before ${calls[i]!.step}; meanwhile ${during.join(', ')}`);
  }
  console.log(`gaps longer than 1.1 × ${interval.toFixed(1)} ms: ${gaps.length}, ${(lost / 1000).toFixed(2)} s lost of ${span.toFixed(2)} s`);
  for (const line of gaps.slice(0, 25)) console.log(line);
} finally {
  await emulator.stop();
  rmSync(dir, { recursive: true, force: true });
}
