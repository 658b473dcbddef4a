import { afterEach, describe, expect, it } from 'vitest';
import { ann, queued, tracker } from './support.js';

const pages = async () => (await queued()).sort((x, y) => x.n - y.n).flatMap((e) => (e.item.type === 'track' ? [e.item] : []));

describe('page()', () => {
  afterEach(() => history.replaceState(null, '', '/'));

  it('sends a page view with URL, path, title and referrer as attributes', async () => {
    history.replaceState(null, '', '/pricing?plan=pro');
    document.title = 'Pricing';
    const { t } = await tracker({ consent: 'store-only' });
    await t.page({ 'str:cm:section': 'top' });
    const [view] = await pages();
    expect(view).toMatchObject({
      activity_id: 'act:cm:page-view',
      attributes: { 'str:cm:url': location.href, 'str:cm:path': '/pricing', 'str:cm:title': 'Pricing', 'str:cm:section': 'top' },
    });
  });

  it('uses the configured activity', async () => {
    const { t } = await tracker({ consent: 'store-only', pageActivity: 'act:cm:viewed' });
    await t.page();
    expect((await pages())[0]!.activity_id).toBe('act:cm:viewed');
  });

  it('SPA mode sends a view on start and on each pushState, replaceState and popstate that changes the URL', async () => {
    const { t } = await tracker({ consent: 'store-only', spa: true });
    await t.identify(ann);
    history.pushState(null, '', '/a');
    history.pushState(null, '', '/a');
    history.replaceState(null, '', '/b');
    history.pushState(null, '', '/c');
    dispatchEvent(new PopStateEvent('popstate'));
    await expect.poll(async () => (await pages()).map((p) => p.attributes!['str:cm:path'])).toEqual(['/', '/a', '/b', '/c']);
  });
});
