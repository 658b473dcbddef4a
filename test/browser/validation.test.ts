import { describe, expect, it } from 'vitest';
import { CdpInputError, isFieldId } from '../../src/browser/index.js';
import { ann, queued, tracker } from './support.js';

describe('validation', () => {
  it.each([
    ['an activity ID of another form', () => ['signed-up'], /"signed-up" is not an activity ID/],
    ['an activity ID outside act:cm', () => ['str:cm:x'], /not an activity ID/],
    ['a non-string activity', () => [42], /not an activity ID/],
    ['attributes keyed by a non field ID', () => ['act:cm:x', { plan: 'pro' }], /"plan" is not a field ID/],
    ['attributes of an unknown type', () => ['act:cm:x', { 'txt:cm:plan': 1 }], /not a field ID/],
    ['attributes that are not an object', () => ['act:cm:x', ['a']], /expected an object keyed by field ID/],
    ['more than 15 attributes', () => ['act:cm:x', Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`str:cm:a${i}`, 1]))], /16 fields; at most 15/],
    ['an event over 16 kB', () => ['act:cm:x', { 'str:cm:blob': 'x'.repeat(16_384) }], /bytes; at most 16384/],
  ])('track rejects %s with a CdpInputError and stores nothing', async (_, args, message) => {
    const { t } = await tracker({ consent: 'pending' });
    const call = (t.track as (...a: unknown[]) => Promise<void>)(...args());
    await expect(call).rejects.toBeInstanceOf(CdpInputError);
    await expect(call).rejects.toThrow(message);
    await t.track('act:cm:fine');
    expect((await queued()).map((e) => e.item.type === 'track' && e.item.activity_id)).toEqual(['act:cm:fine']);
  });

  it('track rejects values that are not JSON', async () => {
    const { t } = await tracker({ consent: 'pending' });
    await expect(t.track('act:cm:x', { 'int:cm:n': 1n })).rejects.toThrow(/BigInt/);
  });

  it('identify needs an email, external ID or person ID', async () => {
    const { t } = await tracker({ consent: 'pending' });
    await expect(t.identify({ 'str::first': 'Ann' })).rejects.toThrow(/cdp\.identify\(\): needs str::email or str::ei or str::person_id/);
    await expect(t.identify({ first: 'Ann' })).rejects.toThrow(/"first" is not a field ID/);
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
    await expect(tracker({ relay: '' })).rejects.toThrow(/options.relay and options.key are required/);
    await expect(tracker({ key: undefined as never })).rejects.toThrow(TypeError);
  });
});
