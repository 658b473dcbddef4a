import { describe, expect, it } from 'vitest';
import { checkFieldValue, checkFields, scaleInt, unscaleInt } from '../../src/api/index.js';

const ok = (id: string, value: unknown) => checkFieldValue(id, value);

describe('field values are checked against the type in their ID', () => {
  it('str: strings up to 255 characters (4,000 for custom text), emails look like emails', () => {
    expect(ok('str::first', 'Ann')).toEqual({ ok: true, value: 'Ann' });
    expect(ok('str::first', 'x'.repeat(256))).toEqual({ ok: false, error: 'str::first: string of 256 characters is longer than 255' });
    expect(ok('str:cm:bio', 'x'.repeat(4000)).ok).toBe(true);
    expect(ok('str:cm:bio', 'x'.repeat(4001)).ok).toBe(false);
    expect(ok('str::email', 'not-an-email')).toMatchObject({ ok: false, error: expect.stringContaining('is not an email address') });
    expect(ok('str::first', 5)).toEqual({ ok: false, error: 'str::first: expected a string, got number' });
  });

  it('int: numbers, decimals kept to 3 places (stored ×1000)', () => {
    expect(ok('int:cm:score', 42)).toEqual({ ok: true, value: 42 });
    expect(ok('int:cm:score', 2.5)).toEqual({ ok: true, value: 2.5 });
    expect(ok('int:cm:score', '7')).toEqual({ ok: true, value: 7 });
    expect(ok('int:cm:score', 1.2345)).toMatchObject({ ok: false, error: expect.stringContaining('3 decimal places') });
    expect(ok('int:cm:score', 'ten')).toEqual({ ok: false, error: 'int:cm:score: expected a number, got string' });
    expect(ok('int:cm:score', Number.NaN).ok).toBe(false);
    expect(scaleInt(2.5)).toBe(2500);
    expect(unscaleInt(2500)).toBe(2.5);
  });

  it('bol: true or false only', () => {
    expect(ok('bol::gdpr', true)).toEqual({ ok: true, value: true });
    expect(ok('bol::gdpr', 'true')).toEqual({ ok: false, error: 'bol::gdpr: expected true or false, got string' });
  });

  it('phn: both forms become {c, n}', () => {
    expect(ok('phn::phone', { c: '44', n: '02079460000' })).toEqual({ ok: true, value: { c: '44', n: '2079460000' } });
    expect(ok('phn::phone', { c: 1, n: '415 555 0100' })).toEqual({ ok: true, value: { c: '1', n: '4155550100' } });
    expect(ok('phn::phone', { phone: '+33 6 12 34 56 78', parse_with_country_code: true })).toEqual({ ok: true, value: { c: '33', n: '612345678' } });
    expect(ok('phn::phone', { phone: '+353 87 123 4567', parse_with_country_code: true })).toEqual({ ok: true, value: { c: '353', n: '871234567' } });
    expect(ok('phn::phone', { phone: '0612345678', parse_with_country_code: false })).toEqual({ ok: true, value: { c: '1', n: '612345678' } });
    expect(checkFieldValue('phn::phone', { phone: '0612345678' }, { defaultCountryCode: '33' })).toEqual({ ok: true, value: { c: '33', n: '612345678' } });
    expect(ok('phn::phone', '+44 20').ok).toBe(false);
    expect(ok('phn::phone', { c: '44', n: '12' })).toEqual({ ok: false, error: 'phn::phone: number must have 4 to 14 digits' });
    expect(ok('phn::phone', { c: 'UK', n: '2079460000' }).ok).toBe(false);
  });

  it('geo: an object with a name', () => {
    expect(ok('geo::city', { name: 'Paris' })).toEqual({ ok: true, value: { name: 'Paris' } });
    expect(ok('geo::city', 'Paris')).toEqual({ ok: false, error: 'geo::city: expected a geo object {name: "…"}' });
    expect(ok('geo::city', { name: '' }).ok).toBe(false);
  });

  it('dtz: real calendar dates with an optional time zone name', () => {
    expect(ok('dtz::b', { year: 1990, month: 2, day: 28, timezone: 'Europe/Paris' })).toEqual({
      ok: true,
      value: { year: 1990, month: 2, day: 28, timezone: 'Europe/Paris' },
    });
    expect(ok('dtz::b', { year: 2024, month: 2, day: 29 }).ok).toBe(true);
    expect(ok('dtz::b', { year: 2023, month: 2, day: 29 })).toMatchObject({ ok: false, error: expect.stringContaining('is not a valid date') });
    expect(ok('dtz::b', { year: 1990, month: 13, day: 1 }).ok).toBe(false);
    expect(ok('dtz::b', { year: 1990, month: '2', day: 1 })).toEqual({ ok: false, error: 'dtz::b: month must be an integer' });
    expect(ok('dtz::b', '1990-02-28').ok).toBe(false);
  });

  it('u4s and obj', () => {
    expect(ok('u4s::t', [1, 2]).ok).toBe(true);
    expect(ok('u4s::t', [1, 'a']).ok).toBe(false);
    expect(ok('obj:cm:prefs', { a: 1 }).ok).toBe(true);
    expect(ok('obj:cm:prefs', [1]).ok).toBe(false);
  });

  it('null always clears; an activity ID is not a field', () => {
    expect(ok('str::first', null)).toEqual({ ok: true, value: null });
    expect(ok('act:cm:x', 'y').ok).toBe(false);
    expect(ok('email', 'a@b.c')).toMatchObject({ ok: false, error: expect.stringContaining('is not a field ID') });
  });

  it('checkFields reports every bad field by name, and the kind must match', () => {
    const result = checkFields({ 'str::email': 'a@b.c', 'int:cm:n': 'x', 'str:o:name': 'Acme' }, 'person');
    expect(result.ok).toBe(false);
    expect(result.errors).toEqual(['int:cm:n: expected a number, got string', '"str:o:name" is not a person field ID (expected type::name or type:cm:name)']);
    expect(checkFields({ 'str:o:name': 'Acme', accounts_id: '10ab' }, 'account').ok).toBe(true);
  });
});
