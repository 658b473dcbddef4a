/**
 * The identity rules as a table: for each situation, what is forwarded, in which kind of call,
 * and what is stripped (docs/security.md has the same table).
 */
import { describe, expect, it } from 'vitest';
import type { Verify } from '../../src/relay/core/sites.js';
import { createIdentity, identityHash, userHash } from '../../src/relay/ingest/identity.js';
import { platformCall } from '../../src/relay/deliver/batch.js';
import { applyIdentityRules, type Ruling } from '../../src/relay/ingest/identity-rules.js';
import type { CheckedItem } from '../../src/relay/ingest/items.js';

const SECRET = 'rules-secret-0123456789abcdef';
const NOW = Date.UTC(2026, 10, 25, 12);
const identity = createIdentity(SECRET, 3600);
const site = (verify: Verify, mergeBy = ['str::email', 'str::ei']) => ({ key: 'pk_rules', verify, mergeBy });
const ME = 'me@example.com';
const VICTIM = 'victim@example.com';
const hash = (field: string, value: string) => identityHash(SECRET, field, value);

let index = 0;
const identify = (fields: Record<string, unknown>, extra: Record<string, unknown> = {}): CheckedItem => ({
  index,
  id: `i${index++}`,
  type: 'identify',
  input: {
    id: 'x',
    type: 'identify',
    fields,
    tags: ['vip'],
    unset_tags: ['churned'],
    location: { custom: { city_name: 'Paris' } },
    ...extra,
  } as never,
});
const track = (person: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}): CheckedItem => ({
  index,
  id: `t${index++}`,
  type: 'track',
  input: { id: 'x', type: 'track', activity_id: 'act:cm:viewed', person, location: { custom: { city_name: 'Paris' } }, ...extra } as never,
});

async function rule(verify: Verify, item: CheckedItem, token?: string, others: CheckedItem[] = []): Promise<Ruling> {
  return (await applyIdentityRules(site(verify), [...others, item], token, identity, NOW)).rulings.at(-1)!;
}
const accepted = (ruling: Ruling) => {
  if (!ruling.ok) throw new Error(`rejected: ${ruling.error}`);
  return ruling;
};
const fieldsOf = (ruling: Ruling) => {
  const { item } = accepted(ruling);
  return item.type === 'identify' ? item.input.fields : item.input.person;
};

describe('identity rules: verified items', () => {
  it('a proven identify may change its person (merge) and keeps tags, location and other fields; an unproven identifier is stripped', async () => {
    const ruling = accepted(
      await rule('required', identify({ 'str::email': ME, 'str::ei': 'victim-ei', 'str::first': 'Me' }, { user_hash: await hash('str::email', ME) })),
    );
    expect(ruling).toMatchObject({ kind: 'merge', verified: true, locate: true, stripped: ['str::ei'] });
    expect(fieldsOf(ruling)).toEqual({ 'str::email': ME, 'str::first': 'Me' });
    expect(ruling.item.input).toMatchObject({ tags: ['vip'], unset_tags: ['churned'], location: { custom: { city_name: 'Paris' } } });
  });

  it('a hash object proves each field it has a good hash for, and nothing else', async () => {
    const both = { 'str::email': await hash('str::email', ME), 'str::ei': await hash('str::ei', 'me-42') };
    expect(fieldsOf(await rule('required', identify({ 'str::email': ME, 'str::ei': 'me-42' }, { user_hash: both })))).toEqual({
      'str::email': ME,
      'str::ei': 'me-42',
    });
    // a hash under the wrong field's key proves nothing
    const misfiled = { 'str::ei': await hash('str::email', VICTIM) };
    const ruling = await rule('required', identify({ 'str::email': VICTIM }, { user_hash: misfiled }));
    expect(ruling).toMatchObject({ ok: false, reason: 'unverified' });
  });

  it('a hash proves its own field only: one made for an external ID is no proof of the same string as an email', async () => {
    const ruling = await rule('required', identify({ 'str::email': VICTIM }, { user_hash: await hash('str::ei', VICTIM) }));
    expect(ruling).toMatchObject({ ok: false, reason: 'unverified' });
  });

  it('the value-only hash of earlier versions proves nothing unless switched on, and then only the email (else external ID)', async () => {
    const legacy = await userHash(SECRET, ME);
    expect(await rule('required', identify({ 'str::email': ME }, { user_hash: legacy }))).toMatchObject({ ok: false });
    const lenient = createIdentity(SECRET, 3600, { legacyHash: true });
    const [onEmail] = (await applyIdentityRules(site('required'), [identify({ 'str::email': ME }, { user_hash: legacy })], undefined, lenient, NOW)).rulings;
    expect(onEmail).toMatchObject({ ok: true, kind: 'merge' });
    // with an email present, a value-only hash of the ei value proves nothing
    const [onEi] = (
      await applyIdentityRules(site('required'), [identify({ 'str::email': VICTIM, 'str::ei': ME }, { user_hash: legacy })], undefined, lenient, NOW)
    ).rulings;
    expect(onEi).toMatchObject({ ok: false });
  });

  it('a track proven by its own user_hash, by the token, or by another item of the request is an activity with its unproven identifiers stripped', async () => {
    const own = accepted(
      await rule('required', track({ 'str::email': ME, 'str::ei': 'victim-ei', 'str::first': 'Me' }, { user_hash: await hash('str::email', ME) })),
    );
    expect(own).toMatchObject({ kind: 'activity', verified: true, locate: true, stripped: ['str::ei'] });
    expect(own.item.input.person).toEqual({ 'str::email': ME, 'str::first': 'Me' });

    const proof = identify({ 'str::email': ME }, { user_hash: await hash('str::email', ME) });
    const rulings = await applyIdentityRules(site('required'), [proof], undefined, identity, NOW);
    const token = await identity.issue('pk_rules', rulings.subjects, NOW);
    expect(await rule('required', track({ 'str::email': ME }), token)).toMatchObject({ ok: true, kind: 'activity', verified: true });
    expect(await rule('required', track({ 'str::email': ME }), undefined, [proof])).toMatchObject({ ok: true, verified: true });
    expect(await rule('required', track({ 'str::email': VICTIM }), token)).toMatchObject({ ok: false, reason: 'unverified' });
  });
});

describe('identity rules: unverified items', () => {
  it('required: an item that proves nothing is rejected as unverified, with a message that names fields but never values', async () => {
    for (const item of [identify({ 'str::email': VICTIM }), track({ 'str::email': VICTIM }), track(undefined)]) {
      const ruling = await rule('required', item);
      expect(ruling).toMatchObject({ ok: false, reason: 'unverified' });
      expect(ruling.ok ? '' : ruling.error).not.toContain('victim');
    }
  });

  it('optional: an unproven identify may only create: merge-create, one identifier, no tags, unset_tags or location', async () => {
    const ruling = accepted(
      await rule('optional', identify({ 'str::email': VICTIM, 'str::ei': 'new-ei', 'str::first': 'Mallory' }, { user_hash: 'ab'.repeat(32) })),
    );
    expect(ruling).toMatchObject({ kind: 'merge-create', verified: false, locate: false, stripped: ['str::ei'] });
    expect(ruling.item.input).toEqual({
      id: 'x',
      type: 'identify',
      fields: { 'str::email': VICTIM, 'str::first': 'Mallory', 'bol::p': false },
      user_hash: 'ab'.repeat(32),
    });
    expect(platformCall(ruling.kind, ['str::email'])).toEqual({ endpoint: 'person/merge', envelope: { merge_by: ['str::email'], merge_strategy: 3 } });
  });

  it('optional and open: a person an unproven identify creates is not subscribed, whatever it sends, unless the site subscribes unproven emails', async () => {
    for (const verify of ['optional', 'open'] as const) {
      const item = identify({ 'str::email': VICTIM, 'bol::p': true, 'bol::sp': true });
      expect(fieldsOf(await rule(verify, item))).toEqual({ 'str::email': VICTIM, 'bol::p': false });
      const { rulings } = await applyIdentityRules({ ...site(verify), subscribeUnverified: true }, [item], undefined, identity, NOW);
      expect(fieldsOf(rulings[0]!)).toEqual({ 'str::email': VICTIM, 'bol::p': true, 'bol::sp': true });
    }
  });

  it('optional: an unproven track is rejected as unverified (it would land on whoever it names), with a message that never quotes values', async () => {
    for (const item of [track({ 'str::email': VICTIM, 'str::first': 'Mallory' }), track(undefined)]) {
      const ruling = await rule('optional', item);
      expect(ruling).toMatchObject({ ok: false, reason: 'unverified' });
      expect(ruling.ok ? '' : ruling.error).not.toContain('victim');
    }
  });

  it('open: an unproven track names its person by one identifier and carries no other person field and no location', async () => {
    const ruling = accepted(await rule('open', track({ 'str::email': VICTIM, 'str::ei': 'new-ei', 'str::first': 'Mallory' })));
    expect(ruling).toMatchObject({ kind: 'activity', verified: false, locate: false });
    expect(ruling.item.input).toEqual({ id: 'x', type: 'track', activity_id: 'act:cm:viewed', person: { 'str::email': VICTIM } });
    // the identifier kept is the first with a usable value, in merge_by order
    expect(fieldsOf(await rule('open', track({ 'str::email': '', 'str::ei': 'e-1' })))).toEqual({ 'str::ei': 'e-1' });
  });

  it('an item the rules leave as it came is passed on itself, not copied (every item of a request: its allocations)', async () => {
    // open: a track that names its person by one identifier and has no location
    const bare = track({ 'str::email': ME }, { location: undefined });
    const open = accepted(await rule('open', bare));
    expect(open.item).toBe(bare);
    expect(open.stripped).toEqual([]);
    // a proven identify with nothing unproven to strip
    const proven = identify({ 'str::email': ME, 'str::first': 'Me' }, { user_hash: await hash('str::email', ME) });
    const ruling = accepted(await rule('required', proven));
    expect(ruling.item).toBe(proven);
    expect(ruling).toMatchObject({ kind: 'merge', verified: true, stripped: [] });
    // what the rules do change is still a copy: the item sent is never altered
    const full = track({ 'str::email': ME, 'str::first': 'Mallory' });
    expect(fieldsOf(await rule('open', full))).toEqual({ 'str::email': ME });
    expect(full.input).toMatchObject({ person: { 'str::email': ME, 'str::first': 'Mallory' }, location: { custom: { city_name: 'Paris' } } });
  });

  it('optional without a secret: nothing can be proven, so every item is reduced', async () => {
    const { rulings, subjects, unverified } = await applyIdentityRules(
      site('optional'),
      [identify({ 'str::email': ME }, { user_hash: await hash('str::email', ME) })],
      undefined,
      undefined,
      NOW,
    );
    expect(rulings[0]).toMatchObject({ ok: true, kind: 'merge-create' });
    expect({ subjects, unverified }).toEqual({ subjects: [], unverified: 1 });
  });

  it('off: the site trusts its browsers: items go as sent, identifies may change their person, no token', async () => {
    const item = identify({ 'str::email': VICTIM, 'str::ei': 'x' });
    const { rulings, subjects } = await applyIdentityRules(site('off'), [item], undefined, identity, NOW);
    expect(rulings[0]).toEqual({ ok: true, item, kind: 'merge', locate: true, verified: false, stripped: [] });
    expect(subjects).toEqual([]);
  });
});

describe('identity rules: the token handed back', () => {
  it('carries what this request proved, else what the token it came with proved', async () => {
    const proof = identify({ 'str::email': ME }, { user_hash: await hash('str::email', ME) });
    const first = await applyIdentityRules(site('optional'), [proof], undefined, identity, NOW);
    expect(first.subjects).toEqual([await identity.subject('pk_rules', 'str::email', ME)]);
    const token = await identity.issue('pk_rules', first.subjects, NOW);
    const later = await applyIdentityRules(site('optional'), [track({ 'str::email': ME })], token, identity, NOW);
    expect(later.subjects).toEqual(first.subjects);
    expect(later.unverified).toBe(0);
  });

  it('keeps the expiry of the token it came with: a refresh never extends the lifetime a proof started', async () => {
    const proof = identify({ 'str::email': ME }, { user_hash: await hash('str::email', ME) });
    const first = await applyIdentityRules(site('required'), [proof], undefined, identity, NOW);
    expect(first.expires).toBeUndefined();
    let token = await identity.issue('pk_rules', first.subjects, NOW, first.expires);
    // refreshed every 10 minutes: each answer's token still ends an hour after the proof
    for (let at = NOW + 600_000; at < NOW + 3600_000; at += 600_000) {
      const later = await applyIdentityRules(site('required'), [track({ 'str::email': ME })], token, identity, at);
      expect(later.rulings[0]).toMatchObject({ ok: true, verified: true });
      expect(later.expires).toBe(NOW + 3600_000);
      token = await identity.issue('pk_rules', later.subjects, at, later.expires);
    }
    const late = await applyIdentityRules(site('required'), [track({ 'str::email': ME })], token, identity, NOW + 3600_000);
    expect(late.rulings[0]).toMatchObject({ ok: false, reason: 'unverified' });
  });
});
