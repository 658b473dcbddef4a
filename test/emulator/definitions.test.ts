import { describe, expect, it } from 'vitest';
import { rejection, useEmulator } from './helpers.js';

let clock = Date.parse('2026-03-01T00:00:00Z');
const h = useEmulator({ now: () => clock, seed: { audiences: [{ id: 'aud-1', name: 'Newsletter' }] } });

describe('custom fields', () => {
  it('person fields: create answers field_id, get answers {field, tracked_value}; the field becomes a merge target', async () => {
    const created = await h.client.person.createCustomField({ type: 'single_select', name: 'Plan Tier', values: ['free', 'pro'], track_changes: true });
    expect(created).toEqual({ name: 'Plan Tier', field_id: 'str:cm:plan-tier', display_type: 'single_select', values: ['free', 'pro'], track_changes: true });
    expect(await h.client.person.getCustomFields()).toEqual({
      fields: [
        {
          field: {
            id: 'str:cm:plan-tier',
            name: 'Plan Tier',
            display_type: 'single_select',
            liquid_name: 'people.custom.plan_tier',
            dic_items: ['free', 'pro'],
          },
          tracked_value: true,
        },
      ],
    });
    const merged = await h.client.person.merge({
      people: [
        { fields: { 'str::email': 'a@example.com', 'str:cm:plan-tier': 'pro' } },
        { fields: { 'str::email': 'b@example.com', 'str:cm:plan-tier': 'gold' } },
      ],
    });
    expect(merged.people!.map((p) => p.status)).toEqual(['created', 'invalid']);
  });

  it('types map to field ID prefixes; account and organization fields share one list in the account shape', async () => {
    const types = {
      text: 'str',
      large_text: 'str',
      integer: 'int',
      decimal: 'int',
      currency: 'int',
      price: 'int',
      date: 'dtz',
      time: 'dtz',
      bool: 'bol',
      phone: 'phn',
      link: 'str',
      object: 'obj',
    } as const;
    for (const [type, prefix] of Object.entries(types)) {
      expect((await h.client.accounts.createCustomField({ type: type as 'text', name: `F ${type}` })).field_id).toBe(
        `${prefix}:oc:f-${type.replace('_', '-')}`,
      );
    }
    await h.client.organizations.createCustomField({ type: 'multi_select', name: 'Regions', values: ['eu', 'us'] });
    const accounts = await h.client.accounts.getCustomFields();
    const organizations = await h.client.organizations.getCustomFields();
    expect(organizations).toEqual(accounts);
    expect(accounts.fields.at(-1)).toEqual({
      id: 'str:oc:regions',
      name: 'Regions',
      display_type: 'multi_select',
      liquid_name: 'accounts.custom.regions',
      dic_items: ['eu', 'us'],
    });
    const merged = await h.client.accounts.merge({
      merge_by: ['str:o:name'],
      accounts: [{ fields: { 'str:o:name': 'Acme', 'int:oc:f-decimal': 1.25, 'str:oc:regions': ['eu'] } }],
    });
    expect(merged.accounts![0]!.status).toBe('created');
  });

  it('refuses duplicates, select fields without values, aggregate, and the 101st field', async () => {
    await h.client.person.createCustomField({ type: 'text', name: 'Nickname' });
    const dup = await rejection(h.client.person.createCustomField({ type: 'text', name: 'nickname' }));
    expect(dup.status).toBe(409);
    expect(dup.message).toContain('already exists');
    expect((await h.call('/v1/person/custom-field/create', { type: 'single_select', name: 'S' })).status).toBe(400);
    expect((await h.call('/v1/person/custom-field/create', { type: 'aggregate', name: 'Agg' })).body.error).toContain('aggregate');
    for (let i = 1; i < 100; i++) await h.client.person.createCustomField({ type: 'text', name: `Field ${i}` });
    const over = await rejection(h.client.person.createCustomField({ type: 'text', name: 'One too many' }));
    expect(over.status).toBe(400);
    expect(over.message).toContain('100 custom fields');
  });
});

describe('activity definitions and events', () => {
  it('creates in awaiting_implementation by Public API, modifies, and deletes (archives)', async () => {
    const created = await h.client.definitions.createActivity({
      name: 'Viewed Pricing',
      icon_id: 'eye-illustration-icon',
      touch: true,
      visible_in_feeds: false,
      display_style: { type: 'activity_attribute', attribute_name: 'Plan', attribute_field_id: 'str:cm:plan' },
      attributes: [
        { name: 'Plan', display_type: 'text' },
        { name: 'Seats', display_type: 'integer' },
        { name: 'First name', display_type: 'text', field_id: 'str::first' },
      ],
    });
    expect(created.custom_activity).toMatchObject({
      name: 'Viewed Pricing',
      activity_field_id: 'act:cm:viewed-pricing',
      state: 'awaiting_implementation',
      created_by: 'Public API',
      icon_id: 'eye-illustration-icon',
      touch: true,
      visible_in_feeds: false,
      display_mode: { type: 'activity_attribute', attribute_name: 'Plan', attribute_field_id: 'str:cm:plan' },
      attributes: [
        { name: 'Plan', field_id: 'str:cm:plan', display_type: 'text', liquid_name: 'activity.custom.viewed_pricing.plan' },
        { name: 'Seats', field_id: 'int:cm:seats', display_type: 'integer', liquid_name: 'activity.custom.viewed_pricing.seats' },
        {
          name: 'First name',
          field_id: 'str:cm:first-name',
          cdp_field_id: 'str::first',
          display_type: 'text',
          liquid_name: 'activity.custom.viewed_pricing.first_name',
        },
      ],
    });
    expect(Date.parse(created.custom_activity.created_at)).not.toBeNaN();
    expect((await rejection(h.client.definitions.createActivity({ name: 'viewed pricing' }))).status).toBe(409);
    expect((await h.call('/v1/definitions/activity/create', { name: 'X', icon_id: 'no-such-icon' })).body.error).toContain('icon_id');
    const modified = await h.client.definitions.modifyActivity({ activity_field_id: 'act:cm:viewed-pricing', name: 'Saw Pricing', state: 'live' });
    expect(modified.custom_activity).toMatchObject({ name: 'Saw Pricing', activity_field_id: 'act:cm:viewed-pricing', state: 'live' });
    expect(await h.client.definitions.deleteActivity({ activity_field_id: 'act:cm:viewed-pricing' })).toEqual({ archived_activity: 'act:cm:viewed-pricing' });
    expect((await rejection(h.client.definitions.modifyActivity({ activity_field_id: 'act:cm:nope' }))).status).toBe(404);
    const refused = await rejection(
      h.client.activities.create({ activities: [{ activity_id: 'act:cm:viewed-pricing', fields: { 'str::email': 'a@example.com' } }] }),
    );
    expect(refused.details[0].error).toContain('archived');
  });

  it('events find or create the person, go live, fill mapped attributes, and answer the recorded shape', async () => {
    await h.client.definitions.createActivity({
      name: 'Signed up',
      attributes: [
        { name: 'Plan', display_type: 'text' },
        { name: 'First', display_type: 'text', field_id: 'str::first' },
      ],
    });
    const [ann] = (await h.client.person.merge({ people: [{ fields: { 'str::email': 'ann@example.com', 'str::first': 'Ann' } }] })).people!;
    const result = await h.client.activities.create({
      activities: [
        {
          activity_id: 'act:cm:signed-up',
          fields: { 'str::email': 'new@example.com' },
          attributes: { 'str:cm:plan': 'pro' },
          location: { source_ip: '192.0.2.10' },
        },
        { activity_id: 'act:cm:signed-up', person_id: ann!.person_id!, attributes: { 'str:cm:plan': 'free' } },
        { activity_id: 'act:cm:signed-up', person_id: ann!.person_id!, attributes: { 'str:cm:unknown': 1 } },
        { activity_id: 'act:cm:never-defined', fields: { 'str::email': 'x@example.com' } },
      ],
    });
    expect(result.activities).toEqual([
      { status: 'queued', person_status: 'queued' },
      { person_id: ann!.person_id, status: 'queued', person_status: 'queued' },
      { status: 'invalid', error: expect.stringContaining('not an attribute') },
      { status: 'invalid', error: expect.stringContaining('definitions/activity/create') },
    ]);
    const state = h.running.emulator.state;
    expect(state.activities.get('act:cm:signed-up')!.state).toBe('live');
    const created = state.peopleBy('str::email', 'new@example.com')[0]!;
    expect(created.location).toMatchObject({ source: 'ip', city_name: 'Paris', ip: { address: '192.0.2.10' } });
    expect(state.people.get(ann!.person_id!)!.events[0]!.attributes).toEqual({ 'str:cm:plan': 'free', 'str:cm:first': 'Ann' });
    expect(state.peopleBy('str::email', 'x@example.com')).toHaveLength(0);
  });

  it('takes 100 events and refuses 101; refuses more than 15 attributes and events over 16 kB', async () => {
    await h.client.definitions.createActivity({ name: 'Click', attributes: [{ name: 'Note', display_type: 'large_text' }] });
    const events = (n: number) => Array.from({ length: n }, (_, i) => ({ activity_id: 'act:cm:click', fields: { 'str::email': `p${i}@example.com` } }));
    expect((await h.client.activities.create({ activities: events(100) })).activities).toHaveLength(100);
    expect((await h.call('/v1/activities/create', { activities: events(101) })).status).toBe(400);
    const many = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`str:cm:a${i}`, 'x']));
    expect(
      (await h.call('/v1/activities/create', { activities: [{ activity_id: 'act:cm:click', fields: { 'str::email': 'a@example.com' }, attributes: many }] }))
        .body.error,
    ).toContain('at most 15');
    const huge = await h.call('/v1/activities/create', {
      activities: [
        {
          activity_id: 'act:cm:click',
          fields: { 'str::email': 'a@example.com', 'str::first': 'z'.repeat(200) },
          attributes: Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`str:cm:n${i}`, 'x'.repeat(3990)])),
        },
      ],
    });
    expect(huge.status).toBe(400);
    expect(huge.body.error).toContain('16 kB');
  });

  it('allows 50 events per activity per person in 24 h', async () => {
    await h.client.definitions.createActivity({ name: 'Ping' });
    const ping = (n: number) => Array.from({ length: n }, () => ({ activity_id: 'act:cm:ping', fields: { 'str::email': 'p@example.com' } }));
    const first = await h.client.activities.create({ activities: ping(50) });
    expect(first.activities.every((a) => a.status === 'queued')).toBe(true);
    const over = await rejection(h.client.activities.create({ activities: ping(1) }));
    expect(over.details[0].error).toContain('50');
    clock += 24 * 3600 * 1000 + 1;
    expect((await h.client.activities.create({ activities: ping(1) })).activities[0]!.status).toBe('queued');
  });
});

describe('tags/get and audience/subscribe', () => {
  it('answers a bare array with current counts; q is token search', async () => {
    await h.client.person.merge({
      people: [
        { fields: { 'str::email': 'a@example.com', 'bol::sp': true }, tags: ['Spring Sale 2026'] },
        { fields: { 'str::email': 'b@example.com', 'bol::p': false }, tags: ['Spring Sale 2026', 'vip'] },
      ],
    });
    const tags = await h.client.tags.get();
    expect(Array.isArray(tags)).toBe(true);
    const sale = tags.find((t) => t.name === 'Spring Sale 2026')!;
    expect(sale).toMatchObject({ id: expect.any(Number), instance_id: 'emulator', source: 'api', count: 2, sms_opted_in: 1, subscribers: 1, type: '' });
    expect((await h.client.tags.get({ q: '2026 spr' })).map((t) => t.name)).toEqual(['Spring Sale 2026']);
    expect(await h.client.tags.get({ q: 'sale vip' })).toEqual([]);
    await h.client.person.merge({ people: [{ fields: { 'str::email': 'b@example.com' }, unset_tags: ['Spring Sale 2026'] }] });
    expect((await h.client.tags.get({ q: 'spring' }))[0]!.count).toBe(1);
  });

  it('sets permissions for members only, by email, person_id or external_id', async () => {
    await h.client.person.merge({ people: [{ fields: { 'str::email': 'm@example.com', 'str::ei': 'ext-m' } }, { fields: { 'str::email': 'n@example.com' } }] });
    const member = h.running.emulator.state.peopleBy('str::email', 'm@example.com')[0]!;
    member.audiences['aud-1'] = { member_from: '2026-01-01T00:00:00Z', subscribed: true, subscribed_from: '2026-01-01T00:00:00Z', sms_opted_in: false };
    const result = await h.client.audience.subscribe({
      audience_id: 'aud-1',
      people: [
        { email: 'm@example.com', subscribed: false },
        { external_id: 'ext-m', sms_opted_in: true },
        { email: 'n@example.com', subscribed: true },
        { email: 'ghost@example.com', subscribed: true },
      ],
    });
    expect(result.audience_id).toBe('aud-1');
    expect(result.people).toEqual([
      { person_status: 'merged', status: 'unsubscribed', person_id: member.id },
      { person_status: 'merged', status: 'unsubscribed', person_id: member.id },
      { person_status: 'merged', status: 'not_member', person_id: expect.any(String), error: expect.stringContaining('not a member') },
      { person_status: 'not_found', status: 'not_member', error: expect.any(String) },
    ]);
    expect(member.audiences['aud-1']).toMatchObject({ subscribed: false, sms_opted_in: true });
    expect((await rejection(h.client.audience.subscribe({ audience_id: 'nope', people: [{ email: 'm@example.com', subscribed: true }] }))).message).toContain(
      'No audience',
    );
  });
});
