/**
 * An in-test platform as a plain fetch handler (so it runs in Node behind a real socket and
 * inside workerd alike). It answers with the shapes of docs/platform.md, records everything it
 * receives, and can be scripted per path.
 */
import { findEndpoint, type EndpointId } from '../../src/api/index.js';

export interface Received {
  method: string;
  path: string;
  search: string;
  headers: Record<string, string>;
  body: unknown;
}

export type Script = (request: Received, count: number) => Response | Promise<Response>;

export interface TestUpstream {
  fetch(request: Request): Promise<Response>;
  received: Received[];
  /** answers requests to `path` with `script` until `reset()` */
  on(path: string, script: Script): void;
  reset(): void;
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const list = (body: unknown, key: string): unknown[] => {
  const value = (body as Record<string, unknown> | undefined)?.[key];
  return Array.isArray(value) ? value : [];
};

/** Recorded-shape answers; every created record gets the next 24-hex ID, so order is visible. */
function defaultAnswer(id: EndpointId, body: unknown, nextId: () => string): Response {
  switch (id) {
    case 'person/merge':
      return json({ people: list(body, 'people').map(() => ({ person_id: nextId(), status: 'created' })) });
    case 'accounts/merge':
      return json({ accounts: list(body, 'accounts').map(() => ({ account_id: nextId(), status: 'created' })) });
    case 'activities/create':
      return json({ activities: list(body, 'activities').map(() => ({ status: 'queued', person_status: 'queued' })) });
    case 'person/archive':
      return json({ scheduled_contacts: 0, archived_contacts: list(body, 'inclusion_ids').length });
    case 'tags/get':
      return json([{ id: 1, name: 'trial', type: '', count: 3 }]);
    default:
      return json({ answered: id, request: nextId() });
  }
}

export function createTestUpstream(): TestUpstream {
  const received: Received[] = [];
  const scripts = new Map<string, Script>();
  const counts = new Map<string, number>();
  let ids = 0;
  const nextId = () => (ids++).toString(16).padStart(24, '0');
  return {
    received,
    on: (path, script) => void scripts.set(path, script),
    reset() {
      received.length = 0;
      scripts.clear();
      counts.clear();
    },
    async fetch(request) {
      const url = new URL(request.url);
      const text = await request.text();
      let body: unknown = text;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        // keep the raw text
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of request.headers) headers[name] = value;
      const entry: Received = { method: request.method, path: url.pathname, search: url.search, headers, body };
      received.push(entry);
      const count = counts.get(url.pathname) ?? 0;
      counts.set(url.pathname, count + 1);
      const script = scripts.get(url.pathname);
      if (script) return script(entry, count);
      const endpoint = findEndpoint(request.method, url.pathname);
      if (!endpoint) return json({ request_id: 'test', code: 404, error: 'Unknown endpoint or method' }, 404);
      return defaultAnswer(endpoint.id, body, nextId);
    },
  };
}
