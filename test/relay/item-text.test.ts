// An outbox item's stored text (state/item-text.ts): written with the entry last, leased with the
// entry as the very text it was stored as; rows of earlier releases (the entry before browser,
// visitor and accepted) still lease whole and alike. The stores' own case is in suite/outbox-suite.ts.
import { describe, expect, it } from 'vitest';
import { itemText, leasedOf, sharedStrings } from '../../src/relay/state/item-text.js';
import type { OutboxItem } from '../../src/relay/state/outbox.js';

const items: OutboxItem[] = [
  {
    site: 'pk_s',
    id: 'a',
    kind: 'activity',
    entry: { activity_id: 'act:cm:viewed', fields: { 'str::email': 'a@x.example' }, attributes: { 'num:cm:n': 1e21 }, created: '2026-11-25T20:00:00.000Z' },
    browser: 'b',
    visitor: 'v',
    accepted: 1_764_000_000_000,
  },
  // Lookalikes of the entry's key in the fields before it and inside it, escapes, and characters JSON may write more than one way.
  {
    site: 'pk_s,"entry":{',
    id: '"entry":',
    kind: 'merge',
    entry: { fields: { 'str::email': ',"entry":{"x":1}' }, ',"entry":': '\u2028 \ud800 😀 \u0000 \\"' },
    browser: 'b","entry":',
    visitor: '\\',
    accepted: 0,
  },
  { site: 's', id: 'e', kind: 'merge-create', entry: {}, browser: '', visitor: '', accepted: 5 },
];

describe('an outbox item as stored', () => {
  it('leases with its entry as the JSON the item was accepted with, byte for byte, and its other fields as they were', () => {
    for (const item of items) {
      const { entry, ...fields } = item;
      expect(leasedOf(itemText(item), 7, 2)).toEqual({ ...fields, text: JSON.stringify(entry), seq: 7, attempts: 2 });
      expect(itemText(item).endsWith(`,"entry":${JSON.stringify(entry)}}`)).toBe(true);
    }
  });

  it("leases a lease's entries through its shared strings with every field as it was, however their values repeat or differ", () => {
    const share = sharedStrings();
    const twice = [...items, ...items.map((item) => ({ ...item, id: `${item.id}2`, browser: item.site, visitor: item.browser }))];
    for (const item of twice) {
      const { entry, ...fields } = item;
      expect(leasedOf(itemText(item), 9, 1, share)).toEqual({ ...fields, text: JSON.stringify(entry), seq: 9, attempts: 1 });
    }
    expect(share('pk_s')).toBe('pk_s');
  });

  it('leases a row an earlier release wrote (the item as ingest built it, its entry before browser, visitor and accepted) alike', () => {
    for (const item of items) {
      const { entry, ...fields } = item;
      const earlier = JSON.stringify({
        site: item.site,
        id: item.id,
        kind: item.kind,
        entry,
        browser: item.browser,
        visitor: item.visitor,
        accepted: item.accepted,
      });
      expect(leasedOf(earlier, 3, 0)).toEqual({ ...fields, text: JSON.stringify(entry), seq: 3, attempts: 0 });
    }
  });
});
