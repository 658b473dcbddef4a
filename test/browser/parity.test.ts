/**
 * One wire contract: the snippet's own checks agree with the relay's and the API's on the same
 * cases, so that what the browser accepts is what the relay accepts.
 */
import { describe, expect, it } from 'vitest';
import { COLLECT_LIMITS } from '../../src/api/collect.js';
import { parseFieldId } from '../../src/api/fields.js';
import { utf8Length } from '../../src/api/limits.js';
import { MAX_BATCH_BYTES, MAX_BATCH_ITEMS } from '../../src/browser/send.js';
import { isActivityId, isFieldId } from '../../src/browser/validate.js';
import { utf8Bytes } from '../../src/browser/validate.js';
import { checkItem } from '../../src/relay/ingest/items.js';
import type { SiteConfig } from '../../src/relay/core/sites.js';
import { ann, fakeRelay, tracker } from './support.js';

const IDS = [
  'str::email',
  'str:cm:plan',
  'int:o:employees',
  'geo:oc:hq',
  'phn::phone',
  'dtz::b',
  'bol::gdpr',
  'u4s::t',
  'obj:cm:cart',
  'str:cm:utm_source',
  'str:cm:a.b-c_d',
  'act:cm:x',
  'act::x',
  'act:o:x',
  'str:email',
  'str:x:y',
  'str:cm:',
  'str:cm:-a',
  'txt:cm:plan',
  'str:cm:a:b',
  `str:cm:${'a'.repeat(128)}`,
  `str:cm:${'a'.repeat(129)}`,
  'STR:cm:plan',
];

const site = { key: 'pk_test', name: 'test', origins: [], allowNoOrigin: true, activities: undefined, fields: undefined } as unknown as SiteConfig;

describe('browser and relay agree', () => {
  it.each(IDS)('on %s as an attribute or person field ID and as an activity ID', (id) => {
    const parsed = parseFieldId(id);
    expect(isFieldId(id)).toBe(parsed !== undefined && parsed.kind !== 'activity');
    expect(isActivityId(id)).toBe(parsed?.kind === 'activity');
  });

  it.each(['', 'plain ascii', 'é', '€', '😀', 'a😀b€é', '\ud800', 'x\udc00y', '"quoted"\n'])('on the UTF-8 size of %j', (text) => {
    expect(utf8Bytes(text)).toBe(utf8Length(text));
    expect(utf8Bytes(JSON.stringify({ text }))).toBe(utf8Length(JSON.stringify({ text })));
  });

  it('on the limits of a batch', () => {
    expect(MAX_BATCH_ITEMS).toBe(COLLECT_LIMITS.items);
    expect(MAX_BATCH_BYTES).toBe(COLLECT_LIMITS.beaconBytes);
  });

  it('every item the tracker sends passes the relay’s checkItem, and the envelope fits its limits', async () => {
    const relay = fakeRelay();
    const { t } = await tracker({}, relay);
    await t.identify({ ...ann, 'str::first': 'Ann' }, { tags: ['trial'] });
    await t.track('act:cm:signed-up', { 'str:cm:plan': 'pro', 'int:cm:seats': 3 }, { location: { city: 'Oslo' } });
    await t.page({ 'str:cm:section': 'top' });
    await t.flush();
    const batch = relay.items();
    expect(batch).toHaveLength(3);
    for (const [index, item] of batch.entries()) expect(checkItem(item, index, site)).toMatchObject({ ok: true });
    const body = relay.sent[0]!.body as { queue?: string };
    expect(body.queue!.length).toBeLessThanOrEqual(COLLECT_LIMITS.queueChars);
    expect(batch.every((item) => item.id.length <= COLLECT_LIMITS.idChars)).toBe(true);
  });
});
