/**
 * Diagnostic: where the deliverer's time goes between two platform calls. The real deliverer
 * (SQLite outbox in a temporary file, the key's pacer as the relay makes it: catching up, its one
 * step of slot, place and mark; the spacer, undici, the relay's 250 ms wait to fill) drains to the
 * built emulator (`cdp-edge emulator --rate-limit <rate> --latency-ms 50`, a child process) while
 * items are accepted into the outbox at an offered rate, as /collect would, 7% of them identifies.
 * Every outbox step (lease, sending, settle), every pacer ask and every platform call is timed,
 * and the tool prints calls per second against the key's rate, entries a call, when the first
 * call left, what each step costs, the gaps between calls leaving longer than the key's spacing
 * with what was running in each, and the whole span cut call by call into what each waited for.
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
import { CATCH_UP_MS } from '../../src/relay/state/pace.js';
import { createSqliteOutbox } from '../../src/relay/state/sqlite-outbox.js';
import { startTimelinePlatform, timelineItem } from '../lib/timeline-items.js';

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
  args: unknown[];
  result?: unknown;
}
const steps: Step[] = [];
/** entries per platform call, in the order the calls started */
const sizes: number[] = [];
/** Times every call of `target`'s methods named in `names`. */
function timed<T extends object>(target: T, names: readonly string[], label = (name: string, _args: unknown[]) => name): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver);
      if (typeof value !== 'function' || !names.includes(String(property))) return value;
      return async (...args: unknown[]) => {
        const start = performance.now();
        let result: unknown;
        try {
          result = await value.apply(object, args);
          return result;
        } finally {
          steps.push({ step: label(String(property), args), start, end: performance.now(), args, result });
        }
      };
    },
  });
}

const dir = mkdtempSync(join(tmpdir(), 'cdp-pace-timeline-'));
const emulator = await startTimelinePlatform(KEY, RATE, ACTIVITY);
try {
  const store = await createSqliteOutbox(join(dir, 'state.db'));
  const outbox = timed<Outbox>(store.outbox, ['lease', 'sending', 'settle', 'lead']);
  // As the relay's (state/node.ts): one deliverer through one spacer, so it may catch up; its
  // one step (slot, place, mark: Pacer.stepsWith) on the store's own outbox, timed as `step`.
  const base = store.pacer(RATE, CATCH_UP_MS);
  const stepOf = base.stepsWith?.(store.outbox);
  const pacer = timed<Pacer>({ ...base, ...(stepOf ? { stepsWith: () => timed({ step: stepOf }, ['step']).step } : {}) }, ['take', 'leave'], (name, args) =>
    name === 'take' ? `take:${args[1]}` : name,
  );
  const upstream: Upstream = timed(
    createUpstream({ baseUrl: emulator.url, apiKey: KEY, transport: createUndiciTransport(), timeoutMs: 10_000, backoff: { until: 0 }, now: Date.now }),
    ['call'],
    (_, args) => {
      const [endpoint, body] = args as [{ id: string }, string];
      const parsed = JSON.parse(body) as Record<string, unknown[] | undefined>;
      sizes.push((parsed['activities'] ?? parsed['people'] ?? []).length);
      return `call:${endpoint.id}`;
    },
  );
  const deliverer = createDeliverer({ outbox, pacer, upstream, clock: systemClock, sites: new Map(), ambiguous: 'hold', waitMs: 250, rate: RATE });
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
  const entries = sizes.reduce((sum, n) => sum + n, 0);
  console.log(
    `entries: ${(entries / Math.max(1, sizes.length)).toFixed(1)} a call, ${sizes.filter((n) => n < 100).length} calls not full, ${calls.filter((c) => (c.result as { status?: number } | undefined)?.status === 429).length} answered 429; the first call ${(calls[0]!.start - started).toFixed(0)} ms after the offer began`,
  );
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
  console.log(spanParts(calls, steps, interval));
} finally {
  await emulator.stop();
  rmSync(dir, { recursive: true, force: true });
}

/**
 * The span between the first and the last call, cut into what each call waited for in turn after
 * the one before it left. Calls look one at a time in plan order (slots.ts `waitToLeave`): each
 * asks the pacer (`leave`, or `step` where the store has one) with its spacer's wait, is marked
 * `sending` (apart, or in the step), then leaves. Parts overlap (a mark begun before the place):
 * each is counted up to what is left of the call's gap, in that order.
 */
function spanParts(calls: Step[], all: Step[], interval: number): string {
  const asks = all.filter((s) => s.step === 'leave' || s.step === 'step' || s.step === 'sending').sort((a, b) => a.start - b.start);
  const marks = (s: Step) => s.step === 'sending' || (s.step === 'step' && (s.result as { marked?: unknown } | undefined)?.marked !== undefined);
  const groups: Step[][] = [[]];
  for (const s of asks) {
    groups.at(-1)!.push(s);
    if (marks(s)) groups.push([]);
  }
  const order = all.filter((s) => s.step.startsWith('call:')).sort((a, b) => a.start - b.start);
  const parts = {
    'not at the spacer yet (slot, calls in flight, merges, lease)': 0,
    "the spacer's wait (window, half a spacing)": 0,
    'the shared window': 0,
    'pacer asks': 0,
    'sending marks': 0,
    'rest (timers late, the event loop)': 0,
  };
  for (let i = 1; i < calls.length; i++) {
    let rest = calls[i]!.start - calls[i - 1]!.start;
    const take = (part: keyof typeof parts, ms: number) => {
      const used = Math.max(0, Math.min(rest, ms));
      parts[part] += used;
      rest -= used;
    };
    const mine = groups[order.indexOf(calls[i]!)] ?? [];
    take('not at the spacer yet (slot, calls in flight, merges, lease)', mine.length === 0 ? rest : mine[0]!.start - calls[i - 1]!.start);
    for (const s of mine) {
      if (s.step === 'sending') take('sending marks', s.end - s.start);
      else {
        take('pacer asks', s.end - s.start);
        const ask = (s.step === 'step' ? (s.args[0] as { inMs: number }).inMs : s.args[1]) as number;
        take("the spacer's wait (window, half a spacing)", ask);
        const shared = s.step === 'step' ? (s.result as { wait: number } | undefined)?.wait : (s.result as number | undefined);
        take('the shared window', Math.max(0, (shared ?? 0) - (s.step === 'step' ? ask : 0)));
      }
    }
    parts['rest (timers late, the event loop)'] += rest;
  }
  const span = calls.at(-1)!.start - calls[0]!.start;
  const lines = Object.entries(parts).map(([part, ms]) => `  ${part.padEnd(62)} ${ms.toFixed(0).padStart(6)} ms`);
  return [
    `the ${span.toFixed(0)} ms between the first and the last call (${((calls.length - 1) * interval).toFixed(0)} ms at the key's spacing), call by call:`,
    ...lines,
  ].join('\n');
}
