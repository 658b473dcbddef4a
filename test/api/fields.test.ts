import { describe, expect, it } from 'vitest';
import { activityFieldId, buildFieldId, canonicalFieldId, customFieldId, isSelectableField, parseFieldId } from '../../src/api/index.js';

describe('field IDs: type:namespace:name', () => {
  it.each([
    ['str::email', { type: 'str', namespace: '', name: 'email', kind: 'person', custom: false }],
    ['str:cm:plan', { type: 'str', namespace: 'cm', name: 'plan', kind: 'person', custom: true }],
    ['phn::phone', { type: 'phn', namespace: '', name: 'phone', kind: 'person', custom: false }],
    ['geo::city', { type: 'geo', namespace: '', name: 'city', kind: 'person', custom: false }],
    ['int:o:employees', { type: 'int', namespace: 'o', name: 'employees', kind: 'account', custom: false }],
    ['bol:oc:paying', { type: 'bol', namespace: 'oc', name: 'paying', kind: 'account', custom: true }],
    ['dtz::b', { type: 'dtz', namespace: '', name: 'b', kind: 'person', custom: false }],
    ['obj:cm:prefs', { type: 'obj', namespace: 'cm', name: 'prefs', kind: 'person', custom: true }],
    ['u4s::t', { type: 'u4s', namespace: '', name: 't', kind: 'person', custom: false }],
    ['act:cm:signed-up', { type: 'act', namespace: 'cm', name: 'signed-up', kind: 'activity', custom: true }],
    ['str::u-ctx', { type: 'str', namespace: '', name: 'u-ctx', kind: 'person', custom: false }],
  ])('parses %s', (id, parts) => {
    expect(parseFieldId(id)).toEqual(parts);
  });

  it.each(['email', 'str:email', 'str::', 'xyz::email', 'str:zz:plan', 'act::signed-up', 'act:o:x', 'str:cm:has space', 'str:cm:a:b', '', 42, null])(
    'refuses %j',
    (id) => {
      expect(parseFieldId(id)).toBeUndefined();
    },
  );

  it('builds IDs and refuses parts the spec does not allow', () => {
    expect(buildFieldId('int', 'o', 'employees')).toBe('int:o:employees');
    expect(activityFieldId('signed-up')).toBe('act:cm:signed-up');
    expect(customFieldId('str', 'person', 'Favourite Colour')).toBe('str:cm:favourite-colour');
    expect(customFieldId('int', 'account', 'Seats')).toBe('int:oc:seats');
    expect(() => buildFieldId('str', 'cm', 'bad name')).toThrow(TypeError);
  });

  it('treats every spelling of the account identifier as one field', () => {
    for (const alias of ['str:o:account_id', 'str:o:accounts_id', 'str:o:organization_id', 'accounts_id']) {
      expect(canonicalFieldId(alias)).toBe('str:o:account_id');
    }
    expect(canonicalFieldId('str::email')).toBe('str::email');
  });

  it('knows which IDs are selectable in retrieval', () => {
    expect(isSelectableField('tags', 'person')).toBe(true);
    expect(isSelectableField('str::email', 'person')).toBe(true);
    expect(isSelectableField('str:o:name', 'person')).toBe(false);
    expect(isSelectableField('accounts_id', 'account')).toBe(true);
  });
});
