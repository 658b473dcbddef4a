/**
 * The second half of the proxy's conformance suite: what happens after a call is let through —
 * the platform's answers (errors, streaming, 429 and the hold), `?chunk=true`, and the audit trail.
 */
import { describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/relay/proxy/index.js';
import { SAMPLE_BODIES } from '../fixtures/bodies.js';
import { API_KEY, people, TOKENS, type Call } from './proxy-suite.js';
import type { TestUpstream } from './proxy-upstream.js';

export interface FlowContext {
  upstream: TestUpstream;
  audit: AuditEntry[];
  call: Call;
  /** moves the target's clock forward */
  advance(ms: number): void;
}

export function flowCases({ upstream, audit, call, advance }: FlowContext): void {
  describe("the platform's answers", () => {
    it('passes status, body and Content-Type of an error through unchanged', async () => {
      const error = { request_id: 'r-1', code: 400, error: 'Unknown filter operator $nope', details: [{ status: 'invalid', error: 'x' }] };
      upstream.on(
        '/v1/person/get',
        () => new Response(JSON.stringify(error), { status: 400, headers: { 'content-type': 'application/json; charset=utf-8', 'set-cookie': 'upstream=1' } }),
      );
      const response = await call('/v1/person/get', 'read', {});
      expect(response.status).toBe(400);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(response.headers.get('set-cookie')).toBeNull();
      expect(await response.json()).toEqual(error);
    });

    it('streams a large page through without waiting for its end', async () => {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const first = '{"contacts":[' + '{"id":"00a1b2c3d4e5f60718293a4b"},'.repeat(2000);
      upstream.on('/v1/person/get', () => {
        const encoder = new TextEncoder();
        const stream = new ReadableStream<Uint8Array>({
          async start(controller) {
            controller.enqueue(encoder.encode(first));
            await released;
            controller.enqueue(encoder.encode('{"id":"00a1b2c3d4e5f60718293a4c"}],"has_more":false}'));
            controller.close();
          },
        });
        return new Response(stream, { headers: { 'content-type': 'application/json' } });
      });
      const response = await call('/v1/person/get', 'read', {});
      expect(response.status).toBe(200);
      const reader = response.body!.getReader();
      const decoder = new TextDecoder();
      let seen = '';
      // The platform has not finished the page yet: what arrives here was streamed, not buffered.
      while (seen.length < first.length) {
        const { done, value } = await reader.read();
        if (done) break;
        seen += decoder.decode(value, { stream: true });
      }
      expect(seen).toBe(first);
      release();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        seen += decoder.decode(value, { stream: true });
      }
      expect((JSON.parse(seen) as { contacts: unknown[] }).contacts).toHaveLength(2001);
    });

    it('passes a 429 on with Retry-After from try-in-seconds, then holds calls for that window without calling the platform', async () => {
      const limited = { error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 7 } };
      upstream.on('/v1/person/get', (_request, count) =>
        count === 0 ? new Response(JSON.stringify(limited), { status: 429, headers: { 'content-type': 'application/json' } }) : Response.json({ contacts: [] }),
      );
      const first = await call('/v1/person/get', 'read', {});
      expect(first.status).toBe(429);
      expect(first.headers.get('retry-after')).toBe('7');
      expect(await first.json()).toEqual(limited);

      advance(2_000);
      const held = await call('/v1/tags/get', 'read', {});
      expect(held.status).toBe(429);
      expect(held.headers.get('retry-after')).toBe('5');
      const body = (await held.json()) as { error: { code: string; message: string; 'try-in-seconds': number } };
      expect(body.error.code).toBe('rate_limited');
      expect(body.error['try-in-seconds']).toBe(5);
      expect(upstream.received).toHaveLength(1);

      advance(5_000);
      const after = await call('/v1/person/get', 'read', {});
      expect(after.status).toBe(200);
      expect(upstream.received).toHaveLength(2);
    });
  });

  describe('?chunk=true', () => {
    it('splits a merge of 250 people into 100 + 100 + 50, sent in order, and joins the answers in order', async () => {
      const body = { people: people(250), merge_by: ['str::email'] };
      const response = await call('/v1/person/merge?chunk=true', 'write', body);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-relay-chunks')).toBe('3');
      const answer = (await response.json()) as { people: { person_id: string; status: string }[] };
      expect(upstream.received.map((r) => (r.body as { people: unknown[] }).people.length)).toEqual([100, 100, 50]);
      const sent = upstream.received.flatMap((r) =>
        (r.body as { people: { fields: Record<string, string> }[]; merge_by: string[] }).people.map((p) => p.fields['str::email']),
      );
      expect(sent).toEqual(body.people.map((p) => p.fields['str::email']));
      expect(upstream.received.every((r) => JSON.stringify((r.body as { merge_by: unknown }).merge_by) === '["str::email"]')).toBe(true);
      expect(answer.people).toHaveLength(250);
      // The platform numbered people in arrival order: the joined answer keeps input order.
      const ids = answer.people.map((p) => parseInt(p.person_id, 16));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(new Set(ids).size).toBe(250);
    });

    it('joins counts by adding them (archive of 250 IDs)', async () => {
      const inclusion_ids = Array.from({ length: 250 }, (_, i) => i.toString(16).padStart(24, '0'));
      const response = await call('/v1/person/archive?chunk=true', 'write', { inclusion_ids }, { method: 'PUT' });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ scheduled_contacts: 0, archived_contacts: 250 });
    });

    it('refuses the whole call, naming the item, when any chunk is invalid: nothing is sent', async () => {
      const body = { people: people(250) };
      body.people[203]!.fields = { 'str::first': 'no email or external id', nope: 'x' } as never;
      const response = await call('/v1/person/merge?chunk=true', 'write', body);
      expect(response.status).toBe(400);
      const error = ((await response.json()) as { error: { message: string; details: { path: string }[] } }).error;
      expect(error.details[0]?.path).toMatch(/^people\[203\]/);
      expect(error.message).toContain('people[203]');
      expect(upstream.received).toHaveLength(0);
    });

    it('waits out a 429 between chunks and resends that chunk', async () => {
      const limited = { error: { code: 'rate-limit', message: 'rate limit', 'try-in-seconds': 2 } };
      upstream.on('/v1/activities/create', (request, count) =>
        count === 1
          ? new Response(JSON.stringify(limited), { status: 429, headers: { 'content-type': 'application/json' } })
          : Response.json({ activities: (request.body as { activities: unknown[] }).activities.map((_, i) => ({ status: 'queued', n: count * 1000 + i })) }),
      );
      const activities = Array.from({ length: 150 }, (_, i) => ({ activity_id: 'act:cm:viewed', fields: { 'str::email': `p${i}@example.com` } }));
      const response = await call('/v1/activities/create?chunk=true', 'write', { activities });
      expect(response.status).toBe(200);
      const answer = (await response.json()) as { activities: { n: number }[] };
      expect(upstream.received.map((r) => (r.body as { activities: unknown[] }).activities.length)).toEqual([100, 50, 50]);
      expect(answer.activities).toHaveLength(150);
      expect(answer.activities.slice(99, 101).map((a) => a.n)).toEqual([99, 2000]);
    });

    it('stops at a chunk the platform refuses and reports what was accepted before it', async () => {
      upstream.on('/v1/accounts/merge', (request, count) =>
        count === 1
          ? Response.json({ request_id: 'r', code: 500, error: 'boom' }, { status: 500 })
          : Response.json({ accounts: (request.body as { accounts: unknown[] }).accounts.map(() => ({ account_id: 'a', status: 'created' })) }),
      );
      const accounts = Array.from({ length: 300 }, (_, i) => ({ fields: { 'str:o:name': `Acme ${i}` } }));
      const response = await call('/v1/accounts/merge?chunk=true', 'write', { accounts, merge_by: ['str:o:name'] });
      expect(response.status).toBe(500);
      const error = ((await response.json()) as { error: { code: string; message: string; details: { chunk: number; status: number }[] } }).error;
      expect(error.code).toBe('chunk_failed');
      expect(error.message).toContain('accounts[100..199]');
      expect(error.details.map((d) => [d.chunk, d.status])).toEqual([
        [1, 200],
        [2, 500],
      ]);
      expect(upstream.received).toHaveLength(2);
    });

    it('is refused without the scope, and on endpoints that have no item list', async () => {
      expect((await call('/v1/person/merge?chunk=true', 'read', { people: people(150) })).status).toBe(403);
      const response = await call('/v1/tags/get?chunk=true', 'read', {});
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('chunk_unsupported');
      expect(upstream.received).toHaveLength(0);
    });
  });

  describe('audit', () => {
    it('writes one entry per call with token name, endpoint, status and duration, never a token, key or body', async () => {
      await call('/v1/person/merge', 'write', SAMPLE_BODIES['person/merge']);
      await call('/v1/person/delete', 'write', SAMPLE_BODIES['person/delete'], { method: 'DELETE' });
      await call('/v1/person/get', null, {});
      await call('/v1/secret/rt_read_token_in_path', 'read', {});
      expect(audit).toHaveLength(4);
      expect(audit.map((e) => [e.token, e.endpoint, e.status, e.upstream_calls])).toEqual([
        ['write-holder', 'person/merge', 200, 1],
        ['write-holder', 'person/delete', 403, 0],
        [null, 'person/get', 401, 0],
        [null, null, 404, 0],
      ]);
      for (const entry of audit) expect(typeof entry.ms).toBe('number');
      const lines = audit.map((entry) => JSON.stringify(entry)).join('\n');
      for (const secret of [...Object.values(TOKENS), API_KEY, 'rt_read_token_in_path', 'ann@example.com']) expect(lines).not.toContain(secret);
    });
  });
}
