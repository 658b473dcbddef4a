import { afterEach, describe, expect, it } from 'vitest';
import { attribution } from '../../src/browser/index.js';
import { ann, queued, tracker } from './support.js';

describe('attribution()', () => {
  it('reads the five utm parameters and the five click ids', () => {
    const href =
      'https://shop.example/p?utm_source=news&utm_medium=email&utm_campaign=spring%20sale&utm_term=shoes&utm_content=hero' +
      '&gclid=G1&fbclid=F1&msclkid=M1&ttclid=T1&li_fat_id=L1&other=x';
    expect(attribution(href, '')).toEqual({
      utm_source: 'news',
      utm_medium: 'email',
      utm_campaign: 'spring sale',
      utm_term: 'shoes',
      utm_content: 'hero',
      gclid: 'G1',
      fbclid: 'F1',
      msclkid: 'M1',
      ttclid: 'T1',
      li_fat_id: 'L1',
    });
  });

  it('keeps a referrer from another site, not one from the same site, and ignores an unreadable one', () => {
    expect(attribution('https://shop.example/', 'https://www.google.com/search?q=x')).toEqual({ referrer: 'https://www.google.com/search?q=x' });
    expect(attribution('https://shop.example/b', 'https://shop.example/a')).toEqual({});
    expect(attribution('https://shop.example/', 'not a url')).toEqual({});
  });

  it('is empty for a direct visit, ignores empty parameters and cuts values at 255 characters', () => {
    expect(attribution('https://shop.example/?utm_source=&gclid=', '')).toEqual({});
    expect(attribution(`https://shop.example/?utm_campaign=${'c'.repeat(300)}`, '').utm_campaign).toHaveLength(255);
  });
});

describe('first touch', () => {
  afterEach(() => history.replaceState(null, '', '/'));

  const identifyFields = async () => (await queued()).sort((x, y) => x.n - y.n).flatMap((e) => (e.item.type === 'identify' ? [e.item.fields] : []));

  it('page views carry the campaign as attributes', async () => {
    history.replaceState(null, '', '/landing?utm_source=news&gclid=G1');
    const { t } = await tracker({ consent: 'store-only' });
    await t.page();
    const [view] = (await queued()).map((e) => e.item);
    expect(view).toMatchObject({ attributes: { 'str:cm:utm_source': 'news', 'str:cm:gclid': 'G1' } });
  });

  it('identify carries the first touch only as the person fields the site chose, and the site’s own values win', async () => {
    history.replaceState(null, '', '/landing?utm_source=news&utm_campaign=spring');
    const { t } = await tracker({
      consent: 'store-only',
      firstTouchFields: { utm_source: 'str:cm:first-source', utm_campaign: 'str:cm:first-campaign' },
    });
    await t.page();
    // A later visit from another campaign is not the first touch.
    history.replaceState(null, '', '/again?utm_source=ads');
    await t.page();
    await t.identify({ ...ann, 'str:cm:first-campaign': 'mine' });
    expect(await identifyFields()).toEqual([{ ...ann, 'str:cm:first-source': 'news', 'str:cm:first-campaign': 'mine' }]);
  });

  it('is off by default: identify sends only the fields it was given', async () => {
    history.replaceState(null, '', '/landing?utm_source=news');
    const { t } = await tracker({ consent: 'store-only' });
    await t.page();
    await t.identify(ann);
    expect(await identifyFields()).toEqual([ann]);
  });

  it('is kept with the visitor across page loads and forgotten by reset', async () => {
    history.replaceState(null, '', '/landing?utm_source=news');
    const first = await tracker({ consent: 'store-only' });
    await first.t.page();
    history.replaceState(null, '', '/');
    const options = { consent: 'store-only' as const, firstTouchFields: { utm_source: 'str:cm:first-source' } };
    const second = await tracker(options);
    await second.t.identify(ann);
    await second.t.reset();
    await second.t.identify({ 'str::email': 'bob@example.com' });
    expect(await identifyFields()).toEqual([{ ...ann, 'str:cm:first-source': 'news' }, { 'str::email': 'bob@example.com' }]);
  });
});
