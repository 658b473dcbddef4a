// The scrubber keeps a short string that cannot hold an email, a token, a hash or a phone after one
// look at its characters (core/logging.ts `mayHold`), and an ISO time as the relay writes its own.
// The shortcut must never keep what the full passes would change: a string of 32 characters or more
// always takes them, so each short string is checked against itself with spaces after it (spaces end
// a word and a phone, so they change nothing the passes find).
import { expect, it } from 'vitest';
import { scrub } from '../../src/relay/core/logging.js';

const PAD = ' '.repeat(32);
const fullPasses = (text: string) => scrub(text + PAD).slice(0, -PAD.length);

it('replaces each kind of value at its shortest', () => {
  expect(scrub('a@b.co')).toBe('[email]');
  expect(scrub('rt_abcdefghijklmnop')).toBe('[token]');
  expect(scrub('5550100')).toBe('[phone]');
  expect(scrub('+1 555 0100')).toBe('[phone]');
  expect(scrub('f'.repeat(32))).toBe('[hex]');
});

it('keeps the strings of a request line as they are', () => {
  for (const text of ['collect', 'POST', '/collect', 'shop', '123456', 'rate_limited', '']) expect(scrub(text)).toBe(text);
  for (let ms = 0; ms < 2_000; ms += 7) {
    const ts = new Date(Date.UTC(2026, 10, 30, 4, 50) + ms * 997_001).toISOString();
    expect(scrub(ts)).toBe(ts);
    expect(fullPasses(ts)).toBe(ts);
  }
});

it('keeps nothing the full passes would change', () => {
  // Strings under 32 characters built from what the passes look for: digits and their separators, @, rt_, hex, letters.
  const parts = '1|23|4567|890|1|23|+|-|.|(|)| |@|rt_|a|f|x|Z|T|:|ex.io|2026-11-30|T04:50:00.123Z'.split('|');
  // xorshift32: the same strings every run
  let state = 2_463_534_242;
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return state >>> 0;
  };
  for (let n = 0; n < 20_000; n++) {
    let text = '';
    while (text.length < 31 && next() % 16 !== 0) text += parts[next() % parts.length];
    text = text.slice(0, 31);
    expect(scrub(text), text).toBe(fullPasses(text));
  }
});
