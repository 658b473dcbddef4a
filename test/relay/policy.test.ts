// The ambiguous-call policy shared by the Node deliverer and the Workers consumer: which outcomes
// may have been applied, and which entries are therefore never sent again without a decision.
import { describe, expect, it } from 'vitest';
import { parseAmbiguousPolicy } from '../../src/relay/core/config.js';
import { afterAmbiguous, outcomeKind } from '../../src/relay/deliver/policy.js';
import { RelayConfigError } from '../../src/relay/core/errors.js';

describe('the ambiguous-call policy', () => {
  it('reads each status as applied, unapplied, ambiguous or refused', () => {
    const read = (statuses: number[]) => statuses.map((status) => outcomeKind(status));
    expect(read([200, 201])).toEqual(['ok', 'ok']);
    expect(read([429, 503, 408, 401, 403])).toEqual(Array(5).fill('unapplied'));
    expect(read([500, 502, 504, 0])).toEqual(Array(4).fill('ambiguous'));
    expect(read([400, 404, 409, 413])).toEqual(Array(4).fill('refused'));
    // no answer: unknown, unless the request is known never to have left
    expect(outcomeKind(0, true)).toBe('unapplied');
  });

  it('holds activities/create after an ambiguous call by default, resends merges, and resends activities only when asked', () => {
    expect(afterAmbiguous('activities/create', 'hold')).toBe('hold');
    expect(afterAmbiguous('person/merge', 'hold')).toBe('resend');
    expect(afterAmbiguous('activities/create', 'resend')).toBe('resend');
  });

  it('reads RELAY_AMBIGUOUS: hold by default, resend on request, anything else names the variable', () => {
    expect(parseAmbiguousPolicy(undefined)).toBe('hold');
    expect(parseAmbiguousPolicy('resend')).toBe('resend');
    expect(() => parseAmbiguousPolicy('sometimes')).toThrow(RelayConfigError);
    expect(() => parseAmbiguousPolicy('sometimes')).toThrow('RELAY_AMBIGUOUS');
  });
});
