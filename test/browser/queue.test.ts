import { describe, expect, it } from 'vitest';
import { ann, fakeRelay, queued, tracker } from './support.js';

describe('queue', () => {
  it('resolves track only once the item is in IndexedDB, with id, ISO time and the activity', async () => {
    const { t } = await tracker({ consent: 'store-only' });
    await t.track('act:cm:signed-up', { 'str:cm:plan': 'pro' });
    const [entry, ...rest] = await queued();
    expect(rest).toEqual([]);
    expect(entry!.item).toMatchObject({ type: 'track', activity_id: 'act:cm:signed-up', attributes: { 'str:cm:plan': 'pro' } });
    expect(entry!.item.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Date(entry!.item.ts).toISOString()).toBe(entry!.item.ts);
  });

  it('keeps the queue across page loads (a new tracker sends what an old one stored)', async () => {
    const first = await tracker({ consent: 'store-only' });
    await first.t.identify(ann);
    await first.t.track('act:cm:viewed');
    await first.t.flush(); // its pass (pending: nothing sent) is over, so the next page gets the lock
    const second = await tracker({ consent: 'granted' });
    await second.t.flush();
    expect(second.relay.items().map((i) => i.type)).toEqual(['identify', 'track']);
    expect(await queued()).toEqual([]);
  });

  it('posts the /collect envelope to <relay>/collect as a plain string body with keepalive', async () => {
    const { t, relay } = await tracker({ relay: 'https://t.example.com/' });
    await t.identify({ ...ann, 'str::first': 'Ann' }, { tags: ['trial'] });
    await t.track('act:cm:signed-up', { 'str:cm:plan': 'pro' });
    await t.flush();
    expect(relay.sent).toHaveLength(1);
    const [s] = relay.sent;
    expect(s!.url).toBe('https://t.example.com/collect');
    expect(typeof s!.init.body).toBe('string');
    expect(s!.init).toMatchObject({ method: 'POST', keepalive: true });
    expect(s!.init.signal).toBeInstanceOf(AbortSignal);
    expect(s!.body.key).toBe('pk_test');
    expect(Date.parse(s!.body.sent_at)).not.toBeNaN();
    expect(s!.body.batch[0]).toMatchObject({ type: 'identify', fields: { 'str::email': 'ann@example.com', 'str::first': 'Ann' }, tags: ['trial'] });
    expect(s!.body.batch[1]).toMatchObject({ type: 'track', activity_id: 'act:cm:signed-up', person: ann });
    expect(await queued()).toEqual([]);
  });

  it('uses the configured path', async () => {
    const { t, relay } = await tracker({ path: '/e' });
    await t.identify(ann);
    await t.flush();
    expect(relay.sent[0]!.url).toBe('https://t.example.com/e');
  });
});

describe('batching', () => {
  it('sends at most 100 items per request', async () => {
    const { t, relay } = await tracker();
    await t.identify(ann);
    await Promise.all(Array.from({ length: 249 }, (_, i) => t.track('act:cm:viewed', { 'int:cm:n': i })));
    await t.flush();
    expect(relay.sent.map((s) => s.body.batch.length)).toEqual([100, 100, 50]);
    const ns = relay.items().flatMap((i) => (i.type === 'track' ? [i.attributes!['int:cm:n']] : []));
    expect(ns).toEqual(Array.from({ length: 249 }, (_, i) => i));
  });

  it('keeps each request under 64 kB so that sendBeacon can carry it', async () => {
    const { t, relay } = await tracker();
    await t.identify(ann);
    const big = 'x'.repeat(10_000);
    await Promise.all(Array.from({ length: 20 }, () => t.track('act:cm:viewed', { 'str:cm:blob': big })));
    await t.flush();
    expect(relay.sent.length).toBeGreaterThanOrEqual(4);
    for (const s of relay.sent) expect(s.bytes).toBeLessThanOrEqual(64 * 1024);
    expect(relay.items()).toHaveLength(21);
  });

  it('counts UTF-8 bytes, not characters', async () => {
    const { t, relay } = await tracker();
    await t.identify(ann);
    const wide = '€'.repeat(3_000); // 9 kB as UTF-8
    await Promise.all(Array.from({ length: 12 }, () => t.track('act:cm:viewed', { 'str:cm:blob': wide })));
    await t.flush();
    for (const s of relay.sent) expect(s.bytes).toBeLessThanOrEqual(64 * 1024);
    expect(relay.items()).toHaveLength(13);
  });
});

describe('per-item results', () => {
  it('deletes accepted, duplicate and rejected items, keeps retry, and reports rejections', async () => {
    const answers: Record<string, string> = {};
    const relay = fakeRelay(() => ({ status: answers }));
    const { t, events } = await tracker({}, relay);
    await t.identify(ann);
    for (const n of [1, 2, 3, 4]) await t.track('act:cm:viewed', { 'int:cm:n': n });
    const [a, b, c, d] = (await queued())
      .filter((e) => e.item.type === 'track')
      .sort((x, y) => x.n - y.n)
      .map((e) => e.item.id);
    Object.assign(answers, { [a!]: 'accepted', [b!]: 'duplicate', [c!]: 'rejected', [d!]: 'retry' });
    await t.flush();
    expect((await queued()).map((e) => e.item.id)).toEqual([d]);
    expect(events.reject).toEqual([{ item: expect.objectContaining({ id: c }), error: 'rejected' }]);
    expect(events.error).toHaveLength(1);

    answers[d!] = 'accepted';
    await t.flush();
    expect(await queued()).toEqual([]);
    expect(relay.sent.at(-1)!.body.batch.map((i) => i.id)).toEqual([d]);
  });

  it('keeps every item when the relay is unreachable or answers without results', async () => {
    let mode = 'down';
    const relay = fakeRelay(() => {
      if (mode === 'down') throw new TypeError('Failed to fetch');
      return new Response('<html>proxy error</html>', { status: 200 });
    });
    const { t, events } = await tracker({}, relay);
    await t.identify(ann);
    await t.track('act:cm:viewed');
    await t.flush();
    mode = 'html';
    await t.flush();
    expect(await queued()).toHaveLength(2);
    expect(events.error.map((e) => e.status)).toEqual([0, 200]);
    expect(events.error[0]!.message).toContain('Failed to fetch');
  });

  it('rejects the items of a request the relay calls malformed (400) instead of sending it forever', async () => {
    const relay = fakeRelay(() => Response.json({ error: { code: 'invalid_body', message: 'batch: must be an array' } }, { status: 400 }));
    const { t, events } = await tracker({}, relay);
    await t.identify(ann);
    await t.flush();
    expect(await queued()).toEqual([]);
    expect(events.reject).toEqual([{ item: expect.objectContaining({ type: 'identify' }), error: 'batch: must be an array' }]);
  });

  it('aborts a request that gets no answer within the timeout and keeps its items', async () => {
    const relay = fakeRelay((s) => new Promise((_, reject) => s.init.signal!.addEventListener('abort', () => reject(s.init.signal!.reason))));
    const { t, events } = await tracker({ timeout: 50 }, relay);
    await t.identify(ann);
    await t.flush();
    expect(events.error[0]).toMatchObject({ status: 0, message: expect.stringMatching(/timeout/i) });
    expect(await queued()).toHaveLength(1);
  });
});
