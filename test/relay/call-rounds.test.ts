// How a lease's activities are cut into platform calls when one browser has a backlog: a quiet
// browser's new item goes in the lease's first call, not behind the heavy sender's entries (and
// not in the last call, the one a backlog holds back to fill), while every browser's items keep
// the order they were accepted in, across calls and within each.
import { describe, expect, it } from 'vitest';
import { planCalls } from '../../src/relay/deliver/batch.js';
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
