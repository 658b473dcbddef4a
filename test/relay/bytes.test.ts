// The relay sizes every activity (16 kB) and upstream call (2 MB) with the api's jsonBytes,
// which counts UTF-8 bytes instead of encoding: it must agree with TextEncoder on any text.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonBytes, utf8Length } from '../../src/api/index.js';

const encoder = new TextEncoder();
const utf16Unit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));

describe('utf8Length / jsonBytes', () => {
  it('agree with TextEncoder on any UTF-16 text, lone surrogates included', () => {
    fc.assert(
      fc.property(fc.string({ unit: utf16Unit }), (text) => utf8Length(text) === encoder.encode(text).byteLength),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => utf8Length(text) === encoder.encode(text).byteLength),
      { numRuns: 2000 },
    );
  });

  it('measure JSON as the platform does', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => jsonBytes(value) === encoder.encode(JSON.stringify(value)).byteLength),
      { numRuns: 500 },
    );
    expect(jsonBytes({ city: 'Zürich', emoji: '😀' })).toBe(encoder.encode('{"city":"Zürich","emoji":"😀"}').byteLength);
  });
});
