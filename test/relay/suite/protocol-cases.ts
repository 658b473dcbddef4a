/**
 * The /collect contract as a user relies on it: one result per item in order, every result kind,
 * every whole-request status, CORS, text/plain / JSON / beacon bodies, no-store everywhere.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_KEY, delivered, identify, ORIGIN, read, siteKey, sites, track, uid, type RelayTarget, type RelayUnderTest } from './target.js';

export function protocolCases(target: () => RelayTarget): void {
  describe('protocol', () => {
    const key = siteKey('proto');
    let relay: RelayUnderTest;
    beforeAll(async () => {
      relay = await target().start({
        RELAY_SITES: sites(
          {
            key,
            origins: [ORIGIN, 'https://*.example.org'],
            activities: ['act:cm:signed-up', 'act:cm:viewed'],
            fields: ['str::email', 'str::first', 'str::ei'],
            // forwarding as sent is what this suite checks; what unproven browsers may write is test/security's
            verify: 'off',
          },
          { key: `${key}_srv`, origins: [], allow_no_origin: true },
          { key: `${key}_slow`, origins: [ORIGIN], rate_limit: { per_second: 0.01, burst: 2 } },
        ),
      });
    });
    afterAll(() => relay.close());
    const calls = async () => (await delivered(target(), relay)).filter((call) => call.path.startsWith('/v1/'));

    it('accepts identify and track, forwarding identify first with the key, the visitor address and no browser credentials', async () => {
      await relay.drained();
      await target().upstream.reset();
      const t = track('act:cm:signed-up', { 'str::email': 'ann@example.com' }, { attributes: { 'str:cm:plan': 'pro' } });
      const i = identify({ 'str::email': 'ann@example.com', 'str::first': 'Ann' }, { tags: ['trial'] });
      const response = await read(
        await relay.post(
          { key, sent_at: new Date().toISOString(), batch: [t, i] },
          { headers: { cookie: 'session=abc', authorization: 'Bearer browser-token' } },
        ),
      );
      expect(response.status).toBe(200);
      expect(response.body.results).toEqual([
        { id: t.id, status: 'accepted' },
        { id: i.id, status: 'accepted' },
      ]);
      const received = await calls();
      expect(received.map((call) => call.path)).toEqual(['/v1/person/merge', '/v1/activities/create']);
      const [merge, activity] = received;
      expect(merge!.headers['x-api-key']).toBe(API_KEY);
      for (const call of received) {
        expect(call.headers['cookie']).toBeUndefined();
        expect(call.headers['authorization']).toBeUndefined();
      }
      expect(merge!.body.people[0]).toMatchObject({
        fields: { 'str::email': 'ann@example.com', 'str::first': 'Ann' },
        tags: ['trial'],
        location: { source_ip: relay.visitorIp },
      });
      expect(merge!.body.merge_by).toEqual(['str::email', 'str::ei']);
      expect(activity!.body.activities[0]).toMatchObject({
        activity_id: 'act:cm:signed-up',
        fields: { 'str::email': 'ann@example.com' },
        attributes: { 'str:cm:plan': 'pro' },
        created: t.ts,
        location: { source_ip: relay.visitorIp },
      });
    });

    it("answers duplicate for an id already forwarded; a repeat inside one batch gets the first copy's outcome, forwarded once", async () => {
      const t = track('act:cm:viewed', { 'str::email': 'bob@example.com' });
      expect((await read(await relay.post({ key, batch: [t] }))).body.results[0].status).toBe('accepted');
      await relay.drained();
      await target().upstream.reset();
      const again = await read(await relay.post({ key, batch: [t, { ...t }] }));
      expect(again.status).toBe(200);
      expect(again.body.results).toEqual([
        { id: t.id, status: 'duplicate' },
        { id: t.id, status: 'duplicate' },
      ]);
      expect(await calls()).toEqual([]);
      const fresh = track('act:cm:viewed', { 'str::email': 'bob@example.com' });
      const pair = await read(await relay.post({ key, batch: [fresh, { ...fresh }] }));
      expect(pair.body.results).toEqual([
        { id: fresh.id, status: 'accepted' },
        { id: fresh.id, status: 'accepted' },
      ]);
      expect((await calls())[0]!.body.activities).toHaveLength(1);
    });

    it('rejects bad items with a reason and still forwards the good ones', async () => {
      await relay.drained();
      await target().upstream.reset();
      const good = track('act:cm:signed-up', { 'str::email': 'cy@example.com' });
      const batch = [
        good,
        { id: uid(), type: 'page' },
        identify({ 'str::email': 'not-an-email' }),
        track('act:cm:not-allowed', { 'str::email': 'cy@example.com' }),
        identify({ 'str::email': 'cy@example.com', 'str:cm:secret-score': 'x' }),
        track('act:cm:signed-up', undefined),
        { id: uid(), type: 'track', activity_id: 'act:cm:signed-up', person: { 'str::email': 'cy@example.com' }, ts: 'yesterday' },
        'not an object',
      ];
      const response = await read(await relay.post({ key, batch }));
      expect(response.status).toBe(200);
      const results = response.body.results as { id: string; status: string; error?: string }[];
      expect(results).toHaveLength(batch.length);
      expect(results[0]).toEqual({ id: good.id, status: 'accepted' });
      for (const result of results.slice(1)) {
        expect(result.status).toBe('rejected');
        expect(result.error).toEqual(expect.any(String));
      }
      expect(results[1]!.error).toMatch(/type/);
      expect(results[2]!.error).toMatch(/email/);
      expect(results[3]!.error).toMatch(/act:cm:not-allowed.*activities/);
      expect(results[4]!.error).toMatch(/str:cm:secret-score/);
      expect(results[5]!.error).toMatch(/person|fields/);
      expect(results[6]!.error).toMatch(/ts/);
      const received = await calls();
      expect(received).toHaveLength(1);
      expect(received[0]!.body.activities).toHaveLength(1);
    });

    it('rejects arrays where objects belong and prototype keys anywhere in an item', async () => {
      await relay.drained();
      await target().upstream.reset();
      const batch = [
        { ...track('act:cm:signed-up', { 'str::email': 'arr@example.com' }), attributes: ['a'] },
        { ...identify({ 'str::email': 'arr@example.com' }), location: ['x'] },
        { id: uid(), type: 'identify', fields: [] },
        JSON.parse(
          `{"id":"${uid()}","type":"track","activity_id":"act:cm:signed-up","person":{"str::email":"arr@example.com"},"attributes":{"__proto__":{"polluted":1}}}`,
        ),
        identify({ 'str::email': 'arr@example.com', constructor: { polluted: true } }),
      ];
      const response = await read(await relay.post({ key, batch }));
      expect(response.body.results.map((r: { status: string }) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
      expect(response.body.results[3].error).toContain('__proto__');
      expect(await calls()).toEqual([]);
      expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    });

    it("maps the platform's per-entry refusals back to the items", async () => {
      await relay.drained();
      await target().upstream.reset();
      const ok = identify({ 'str::email': 'dee@example.com' });
      const suppressed = identify({ 'str::email': 'eve@example.com' });
      await target().upstream.faults([
        {
          status: 200,
          body: {
            people: [
              { person_id: '00aa00aa00aa00aa00aa00aa', status: 'created' },
              { status: 'suppressed', error: 'Email is suppressed' },
            ],
          },
        },
      ]);
      const response = await read(await relay.post({ key, batch: [ok, suppressed] }));
      if (target().deliversLater) {
        // Accepted before the platform saw it: the refusal lands in the dead-letter list, with its reason.
        expect(response.body.results).toEqual([
          { id: ok.id, status: 'accepted' },
          { id: suppressed.id, status: 'accepted' },
        ]);
        expect((await calls()).map((call) => call.body.people.length)).toEqual([2]);
        expect(await relay.deadLetters()).toEqual([{ id: suppressed.id, reason: expect.stringContaining('Email is suppressed') }]);
        return;
      }
      expect(response.body.results).toEqual([
        { id: ok.id, status: 'accepted' },
        { id: suppressed.id, status: 'rejected', reason: 'platform', error: expect.stringContaining('Email is suppressed') },
      ]);
      // A refused item is not remembered as forwarded: sent again, it goes again.
      await relay.drained();
      await target().upstream.reset();
      const again = await read(await relay.post({ key, batch: [suppressed] }));
      expect(again.body.results[0].status).toBe('accepted');
    });

    it('finds the bad entries when the platform refuses a whole call, and forwards the rest', async () => {
      await relay.drained();
      await target().upstream.reset();
      const batch = [
        track('act:cm:viewed', { 'str::email': 'f1@example.com' }),
        track('act:cm:viewed', { 'str::email': 'f2@example.com' }),
        track('act:cm:viewed', { 'str::email': 'f3@example.com' }),
      ];
      // The platform refuses every call that holds f1: the whole call fails, and a call of up to 4 is
      // cut into single entries, which may be in flight together and arrive in any order: f1 alone
      // fails, f2 and f3 go.
      await target().upstream.always({ when: 'f1@example.com', status: 400, body: { request_id: 'r', code: 400, error: 'f1 is bad' } });
      try {
        const response = await read(await relay.post({ key, batch }));
        if (target().deliversLater) {
          expect(response.body.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'accepted', 'accepted']);
          await relay.drained();
          const sent = (await calls()).map((call) => [
            call.status,
            call.body.activities.map((a: { fields: Record<string, string> }) => a.fields['str::email']),
          ]);
          // The whole call goes first; its pieces in whatever order they arrived, each once.
          expect(sent[0]).toEqual([400, ['f1@example.com', 'f2@example.com', 'f3@example.com']]);
          expect(sent.slice(1).sort((x, y) => String(x[1]).localeCompare(String(y[1])))).toEqual([
            [400, ['f1@example.com']],
            [200, ['f2@example.com']],
            [200, ['f3@example.com']],
          ]);
          const ids = new Set<string>(batch.map((item) => item.id));
          expect((await relay.deadLetters()).filter((letter) => ids.has(letter.id))).toEqual([
            { id: batch[0]!.id, reason: expect.stringContaining('f1 is bad') },
          ]);
          return;
        }
        expect(response.body.results.map((r: { status: string }) => r.status)).toEqual(['rejected', 'accepted', 'accepted']);
        expect(response.body.results[0].error).toContain('f1 is bad');
      } finally {
        await target().upstream.always(undefined);
      }
    });

    it('takes text/plain, application/json, a beacon body (text/plain;charset=UTF-8) and a body without Content-Type', async () => {
      for (const contentType of ['text/plain', 'application/json', 'application/json; charset=utf-8', 'text/plain;charset=UTF-8', null]) {
        const item = track('act:cm:viewed', { 'str::email': 'gil@example.com' });
        const response = await read(await relay.post({ key, batch: [item] }, { contentType }));
        expect(response.status, String(contentType)).toBe(200);
        expect(response.body.results[0].status).toBe('accepted');
      }
      const refused = await read(await relay.post({ key, batch: [] }, { contentType: 'application/x-www-form-urlencoded' }));
      expect(refused.status).toBe(415);
      expect(refused.body.error.code).toBe('unsupported_media_type');
    });

    it('answers every whole-request failure with its status and {"error":{code,message,details}}', async () => {
      const cases: [string, Promise<Response>, number, string][] = [
        ['not JSON', relay.post('{"key":'), 400, 'malformed_body'],
        ['no batch', relay.post({ key }), 400, 'invalid_body'],
        ['an array', relay.post([1, 2]), 400, 'invalid_body'],
        ['unknown key', relay.post({ key: 'pk_nobody', batch: [] }), 401, 'unknown_site_key'],
        ['foreign origin', relay.post({ key, batch: [] }, { origin: 'https://evil.example.net' }), 403, 'origin_not_allowed'],
        ['no origin', relay.post({ key, batch: [] }, { origin: null }), 403, 'origin_required'],
        [
          '101 items',
          relay.post({ key, batch: Array.from({ length: 101 }, () => track('act:cm:viewed', { 'str::email': 'h@example.com' })) }),
          413,
          'too_many_items',
        ],
        ['513 KB', relay.post(JSON.stringify({ key, batch: [], pad: 'x'.repeat(513 * 1024) })), 413, 'body_too_large'],
        ['GET', relay.fetch('/collect'), 405, 'method_not_allowed'],
      ];
      for (const [label, pending, status, code] of cases) {
        const response = await read(await pending);
        expect(response.status, label).toBe(status);
        expect(response.body, label).toEqual({ error: { code, message: expect.any(String), details: expect.any(Array) } });
        expect(response.headers.get('cache-control'), label).toBe('no-store');
      }
    });

    it('accepts requests without Origin only for sites that allow it', async () => {
      const response = await read(await relay.post({ key: `${key}_srv`, batch: [track('act:cm:x', { 'str::email': 'srv@example.com' })] }, { origin: null }));
      expect(response.status).toBe(200);
      expect(response.body.results[0].status).toBe('accepted');
    });

    it('matches wildcard origins one subdomain deep or more, and nothing else', async () => {
      expect((await read(await relay.post({ key, batch: [] }, { origin: 'https://blog.example.org' }))).status).toBe(200);
      expect((await read(await relay.post({ key, batch: [] }, { origin: 'https://example.org' }))).status).toBe(403);
      expect((await read(await relay.post({ key, batch: [] }, { origin: 'https://blog.example.org.evil.net' }))).status).toBe(403);
      expect((await read(await relay.post({ key, batch: [] }, { origin: 'http://blog.example.org' }))).status).toBe(403);
    });

    it('rate-limits a site with 429 and Retry-After once its bucket is empty', async () => {
      const slow = `${key}_slow`;
      expect((await read(await relay.post({ key: slow, batch: [] }))).status).toBe(200);
      expect((await read(await relay.post({ key: slow, batch: [] }))).status).toBe(200);
      const limited = await read(await relay.post({ key: slow, batch: [] }));
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe('rate_limited');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      // Other sites keep their own bucket.
      expect((await read(await relay.post({ key, batch: [] }))).status).toBe(200);
    });

    describe('CORS', () => {
      it('answers a preflight from an allowed origin with that origin, never * and never credentials', async () => {
        const response = await read(
          await relay.fetch('/collect', {
            method: 'OPTIONS',
            headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
          }),
        );
        expect(response.status).toBe(204);
        expect(response.headers.get('access-control-allow-origin')).toBe(ORIGIN);
        expect(response.headers.get('access-control-allow-methods')).toContain('POST');
        expect(response.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-type');
        expect(response.headers.get('access-control-allow-credentials')).toBeNull();
        expect(response.headers.get('vary')).toContain('Origin');
        expect(response.headers.get('cache-control')).toBe('no-store');
      });

      it('refuses a preflight from a foreign origin without CORS headers', async () => {
        const response = await read(
          await relay.fetch('/collect', { method: 'OPTIONS', headers: { origin: 'https://evil.example.net', 'access-control-request-method': 'POST' } }),
        );
        expect(response.status).toBe(403);
        expect(response.headers.get('access-control-allow-origin')).toBeNull();
        expect(response.headers.get('vary')).toContain('Origin');
      });

      it('echoes an allowed origin on actual requests and never a foreign one', async () => {
        const allowed = await read(await relay.post({ key, batch: [] }));
        expect(allowed.headers.get('access-control-allow-origin')).toBe(ORIGIN);
        expect(allowed.headers.get('vary')).toContain('Origin');
        const foreign = await read(await relay.post({ key, batch: [] }, { origin: 'https://evil.example.net' }));
        expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
        expect(foreign.headers.get('vary')).toContain('Origin');
      });
    });

    it('serves /healthz and a JSON 404 elsewhere, both no-store', async () => {
      const health = await read(await relay.fetch('/healthz'));
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ ok: true });
      expect(health.headers.get('cache-control')).toBe('no-store');
      const missing = await read(await relay.fetch('/nothing-here'));
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
      expect(missing.headers.get('cache-control')).toBe('no-store');
    });
  });
}
