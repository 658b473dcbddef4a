// How a lease's activities are cut into platform calls when one browser has a backlog: a quiet
// browser's new item goes in the lease's first call, not behind the heavy sender's entries (and
// not in the last call, the one a backlog holds back to fill), while every browser's items keep
// the order they were accepted in, across calls and within each.
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/api/index.js';
import { bodyOf, planCalls } from '../../src/relay/deliver/batch.js';
import type { Leased } from '../../src/relay/state/outbox.js';

let seq = 0;
const activity = (browser: string): Leased => ({
  seq: ++seq,
  attempts: 0,
  site: 'pk_s',
  id: crypto.randomUUID(),
  kind: 'activity',
  browser,
  visitor: browser,
  accepted: Date.now(),
  text: JSON.stringify({ activity_id: 'act:cm:viewed', person: { 'str::email': `${browser}@example.com` } }),
});
const sites = { mergeBy: () => ['str::email'], proven: () => true };

describe('the calls of a lease with a backlog', () => {
  it('carries each quiet browser’s new item in the first call and the heavy sender’s backlog after, each browser in accepted order', () => {
    // A flood of 250 from one browser was accepted first; then 10 visitors sent one item each, and one sent three.
    const flood = Array.from({ length: 250 }, () => activity('flood'));
    const quiet = Array.from({ length: 10 }, (_, n) => activity(`quiet-${n}`));
    const three = Array.from({ length: 3 }, () => activity('three'));
    const calls = planCalls([...flood, ...quiet, ...three], sites);
    expect(calls.map((call) => call.entries.length)).toEqual([100, 100, 63]);
    const first = new Set(calls[0]!.entries.map((entry) => entry.seq));
    for (const entry of quiet) expect(first.has(entry.seq)).toBe(true);
    // The three's first goes in the first call with the flood's first; the last call is the flood's alone.
    expect(first.has(three[0]!.seq)).toBe(true);
    expect(new Set(calls[2]!.entries.map((entry) => entry.browser))).toEqual(new Set(['flood']));
    // Every browser's items in the order they were accepted, across the calls and within each.
    const sent = calls.flatMap((call) => call.entries);
    expect(sent).toHaveLength(263);
    for (const browser of ['flood', 'three']) {
      const seqs = sent.filter((entry) => entry.browser === browser).map((entry) => entry.seq);
      expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
  });
});

describe('the calls of a lease of large entries', () => {
  const sized = (browser: string, note: string): Leased => ({
    ...activity(browser),
    text: JSON.stringify({ activity_id: 'act:cm:viewed', attributes: { 'str:cm:note': note }, person: { 'str::email': `${browser}@example.com` } }),
  });
  /** UTF-8 bytes of the entries of a call and the commas between them, as its body holds them. */
  const bytesOf = (call: { texts: string[] }) => call.texts.reduce((bytes, text) => bytes + Buffer.byteLength(text) + 1, 0);

  it('fills each call up to 2 MB less room for the envelope, counting UTF-8 bytes, never past it', () => {
    // 80 kB of two-byte characters an entry, some with four-byte ones, some ASCII: 26 two-byte ones fit, 17 would at three bytes a character.
    const notes = ['é'.repeat(40_000), '😀'.repeat(20_000), 'a'.repeat(80_000), 'é'.repeat(39_000)];
    const leased = Array.from({ length: 80 }, (_, n) => sized(`b${n}`, notes[n % notes.length]!));
    const calls = planCalls(leased, sites);
    expect(calls.flatMap((call) => call.entries)).toHaveLength(80);
    const room = LIMITS.payloadBytes - 4 * 1024;
    for (const [i, call] of calls.entries()) {
      expect(Buffer.byteLength(bodyOf(call))).toBeLessThanOrEqual(LIMITS.payloadBytes);
      expect(bytesOf(call)).toBeLessThanOrEqual(room);
      // As full as the limit allows: the next call's first entry would not have fitted.
      const next = calls[i + 1];
      if (next !== undefined) expect(bytesOf(call) + Buffer.byteLength(next.texts[0]!) + 1).toBeGreaterThan(room);
    }
    expect(calls[0]!.entries.length).toBeGreaterThan(17);
  });
});
