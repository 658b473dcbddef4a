// The relay's pace against a platform in a process of its own (the built CLI's emulator), counting
// calls on its own clock as a real one does, whose calls meet jitter on the way there (the
// emulator's --jitter-ms: each call counted, at random, as it arrives or 100 ms later). With the base
// margin (3%, 30 ms) such a platform answers 429s all along; the key's pacer learns a wider margin
// from them (state/margin.ts), so the relay draws a few and then none. Without jitter it keeps the
// base margin and its pace.
import { afterAll, describe, expect, it } from 'vitest';
import { createRelayHandlers } from '../../src/relay/app.js';
import { parseConfig } from '../../src/relay/core/config.js';
import type { DeliveryEvent } from '../../src/relay/core/observe.js';
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/state/memory-outbox.js';
import { SEND_MARGIN } from '../../src/relay/state/margin.js';
import { CATCH_UP_MS } from '../../src/relay/state/pace.js';
import { startEmulatorProcess } from '../support/emulator-process.js';
import { backlog, DAY, defineActivity, KEY, ORIGIN, useDeliveryKit } from './support/delivery-kit.js';

useDeliveryKit();

/**
 * The platform counts calls in fixed windows of a second, so a key draws holds per second, whatever
 * its rate (at 30 calls/s, the fixed 3% drew no more holds in 18 s than at 10): eight keys drained at
 * once, each with its own platform and relay, give eight chances in the time of one.
 */
const KEYS = 8;
/** A key's tracks: about 15 s of its pace. */
const TRACKS = 12_000;
const closing: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** `items` tracks, accepted at once, drained by a relay paced at 10 calls/s to a platform limited to 10 that counts each call as it arrives or `jitterMs` later. */
async function drain(jitterMs: number, items: number) {
  const platform = await startEmulatorProcess(['--key', KEY, '--rate-limit', '10', '--latency-ms', '200', '--jitter-ms', String(jitterMs)]);
  closing.push(() => platform.close());
  // Every call to the key takes its slot, this setup call too.
  const pacer = createMemoryPacer(10, CATCH_UP_MS);
  // Where the key's window counted each call to leave (a call counted again for leaving late moves its place).
  const places: number[] = [];
  const leave = pacer.leave!;
  pacer.leave = async (now, inMs, again) => {
    const wait = await leave(now, inMs, again);
    if (again) places.pop();
    if (wait === 0) places.push(now + inMs);
    return wait;
  };
  expect(await pacer.take(Date.now(), 'proxy')).toBe(0);
  await defineActivity(platform.url);
  const config = parseConfig({
    CDP_API_KEY: KEY,
    CDP_BASE_URL: platform.url,
    RELAY_SITES: JSON.stringify([{ key: 'pk_j', origins: [ORIGIN], verify: 'open' }]),
    RELAY_LOG: 'off',
    RELAY_PLATFORM_RATE: '10',
  });
  const outbox = createMemoryOutbox();
  const now = Date.now();
  const tracks = backlog('pk_j', 'jitter', items, now);
  expect((await outbox.accept(tracks, now, DAY)).accepted).toHaveLength(items);
  const calls: DeliveryEvent[] = [];
  const handlers = createRelayHandlers(config, { pacer, outbox, observer: { delivery: (event) => event.called && calls.push(event) } });
  closing.push(() => handlers.close());
  await handlers.drained({ timeoutMs: 60_000 });
  const counts = (await platform.calls())['activities/create']!;
  // A call that outlived its time (a loaded machine) is held, never resent: its entries are dead
  // letters, reason `ambiguous`, and may not have reached the platform.
  const letters = await outbox.deadLetters();
  // A hold begins with a 429 answered more than its second after the one before.
  const limited = calls.filter((call) => call.status === 429).map((call) => call.at);
  const holds = limited.filter((at, n) => n === 0 || at - limited[n - 1]! > 1_000).length;
  const taken = calls.filter((call) => call.status === 200).map((call) => call.at);
  const first = calls[0]!.at;
  return {
    counts,
    held: letters.length,
    heldReasons: [...new Set(letters.map((letter) => letter.reason))],
    holds,
    limited: limited.length,
    /** when each call answered 429 was answered, in s from the first call's answer */
    limitedAt: limited.map((at) => ((at - first) / 1000).toFixed(1)).join(', '),
    perSecond: ((taken.length - 1) * 1000) / (taken.at(-1)! - taken[0]!),
    /** the most calls counted to leave within one window of the key's rate (a second and the base margin) */
    fullest: Math.max(...places.map((at) => places.filter((place) => place >= at && place < at + 1000 * (1 + SEND_MARGIN)).length)),
    /** the widest send margin the deliverer kept for the key after any call (state/margin.ts) */
    widest: Math.max(...calls.map((call) => call.margin ?? Number.NaN)),
  };
}

/**
 * Never twice, never lost: the platform counted each of `tracks` once, or it is held as ambiguous (a
 * call that outlived its time on a loaded machine: 11,900 counted of 12,000 once, at load 8–21),
 * which the relay never resends and which may or may not have reached the platform.
 */
function expectEachOnce(key: { counts: { entries: number }; held: number; heldReasons: string[] }, tracks: number): void {
  if (key.held > 0) console.log(`${key.held} entries held as ambiguous (calls that outlived their time)`);
  expect(key.counts.entries).toBeLessThanOrEqual(tracks);
  expect(key.counts.entries + key.held).toBeGreaterThanOrEqual(tracks);
  expect(key.heldReasons.filter((reason) => reason !== 'ambiguous')).toEqual([]);
}

describe('a pace learned from the platform', () => {
  it("draws a few 429s from a platform that counts calls up to 100 ms late, then none: three holds at most per key, each widening the key's margin", async () => {
    const keys = await Promise.all(Array.from({ length: KEYS }, () => drain(100, TRACKS)));
    const said = keys.map(
      ({ holds, limited, limitedAt, perSecond }) => `${holds} holds, ${limited} calls answered 429 (at ${limitedAt} s), ${perSecond.toFixed(2)} calls/s`,
    );
    console.log(`jitter 100 ms:\n${said.join('\n')}`);
    for (const key of keys) expectEachOnce(key, TRACKS);
    // With 3% (30 ms) or 6%, a call counted late opens a window the tenth call after it is counted in:
    // with the fixed 3%, a hold every 3–5 s all along (1–5 a key in 12,000 tracks, more than 3 on 24 of 64
    // keys, 1–6 of the 8 in each of 8 runs; fewer on a loaded machine). Each hold's first 429 doubles the margin: 12%
    // (120 ms) is more than the jitter, so no calls of that pace are counted 11 in a second; a loaded
    // machine's own timing may cost one more hold (15%, the most), and none can come then.
    expect(
      keys.map(({ holds, limited }) => ({ holds: holds <= 3, limited: limited <= 6 })),
      said.join('; '),
    ).toEqual(keys.map(() => ({ holds: true, limited: true })));
  }, 150_000);

  it('keeps its margin and its pace where calls meet no jitter: one hold at most, the margin widened once at most', async () => {
    const drained = await drain(0, 6_000);
    const { fullest, holds, limited, perSecond, widest } = drained;
    expectEachOnce(drained, 6_000);
    console.log(
      `no jitter: ${holds} holds, ${limited} calls answered 429, ${perSecond.toFixed(2)} calls/s, at most ${fullest} in a window, widest margin ${widest}`,
    );
    // A platform on its own clock beside a loaded machine meets the machine's own timing: in
    // fresh-clone CI runs (load 6–11) it answered one call 429 at the base 3%. That first 429 nothing
    // can prevent; what holds is that it is the only one and widens the margin once (6%), never to the
    // 12% a second widening, or one without cause, would make.
    expect(holds, `${limited} calls answered 429`).toBeLessThanOrEqual(1);
    expect(widest).toBeLessThanOrEqual(2 * SEND_MARGIN);
    // And the pace is the rate's: the key's window let as many calls as the rate in one window of it
    // (a second and the margin). Not the calls a second over the drain, which the machine's own pace
    // lowers (9.5–10 idle, 7.5–7.9 at load 14–18, where a pacer of 8 a second read the same): in
    // runs at load 15–22 the fullest window held 10 calls at 8.7–10 calls a second, and 8 with the
    // deliverer paced at 8.
    expect(fullest, `${perSecond.toFixed(2)} calls/s`).toBe(10);
  }, 60_000);
});
