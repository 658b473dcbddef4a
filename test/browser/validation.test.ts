import { describe, expect, it } from 'vitest';
import { CdpInputError, isFieldId } from '../../src/browser/index.js';
import { ann, queued, tracker } from './support.js';

describe('validation', () => {
  it.each([
    ['an activity ID of another form', () => ['signed-up'], /cdp\.track\(\): E2 signed-up/],
    ['an activity ID outside act:cm', () => ['str:cm:x'], /E2 str:cm:x/],
    ['a non-string activity', () => [42], /E2 42/],
    ['attributes keyed by a non field ID', () => ['act:cm:x', { plan: 'pro' }], /cdp\.track\(\): E5 plan/],
    ['attributes of an unknown type', () => ['act:cm:x', { 'txt:cm:plan': 1 }], /E5 txt:cm:plan/],
    ['attributes that are not an object', () => ['act:cm:x', ['a']], /cdp\.track\(\): E3/],
    ['more than 15 attributes', () => ['act:cm:x', Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`str:cm:a${i}`, 1]))], /E4 16>15/],
    ['an event over 16 kB', () => ['act:cm:x', { 'str:cm:blob': 'x'.repeat(16_384) }], /E6 \d+>16384/],
  ])('track rejects %s with a CdpInputError and stores nothing', async (_, args, message) => {
    const { t } = await tracker({ consent: 'store-only' });
    const call = (t.track as (...a: unknown[]) => Promise<void>)(...args());
    await expect(call).rejects.toBeInstanceOf(CdpInputError);
    await expect(call).rejects.toThrow(message);
    await t.track('act:cm:fine');
    expect((await queued()).map((e) => e.item.type === 'track' && e.item.activity_id)).toEqual(['act:cm:fine']);
  });

  it('track rejects values that are not JSON', async () => {
    const { t } = await tracker({ consent: 'store-only' });
    await expect(t.track('act:cm:x', { 'int:cm:n': 1n })).rejects.toThrow(/BigInt/);
  });

  it('identify needs an email, external ID or person ID', async () => {
    const { t } = await tracker({ consent: 'store-only' });
    await expect(t.identify({ 'str::first': 'Ann' })).rejects.toThrow(/cdp\.identify\(\): E7/);
    await expect(t.identify({ first: 'Ann' })).rejects.toThrow(/E5 first/);
    await expect(t.identify(null as never)).rejects.toBeInstanceOf(CdpInputError);
    await t.identify(ann);
    expect(await queued()).toHaveLength(1);
  });

  it('accepts every field ID form of the spec', () => {
    for (const id of ['str::email', 'str:cm:plan', 'int:o:employees', 'geo:oc:hq', 'phn::phone', 'dtz::b', 'bol::gdpr', 'u4s::t', 'obj:cm:cart'])
      expect(isFieldId(id)).toBe(true);
    for (const id of ['str:email', 'str:x:y', 'str:cm:', 'str:cm:-a', 'act:cm:x', `str:cm:${'a'.repeat(129)}`]) expect(isFieldId(id)).toBe(false);
  });

  it('createTracker throws a TypeError naming the missing options', async () => {
    await expect(tracker({ relay: '' })).rejects.toThrow(/createTracker\(\): E1/);
    await expect(tracker({ key: undefined as never })).rejects.toThrow(TypeError);
  });
});
