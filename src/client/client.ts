/**
 * `createClient`: one typed method per platform endpoint, grouped as a user looks for them.
 *
 * @example
 * const client = createClient({ apiKey: process.env.CDP_API_KEY!, region: 'eu' });
 * await client.person.merge({ people: [{ fields: { 'str::email': 'ann@example.com' } }] });
 * for await (const person of client.person.all({ fields: ['str::email'] })) console.log(person.id);
 * @module
 */
import {
  ENDPOINT_LIST,
  ENDPOINTS,
  failedEntries,
  joinAnswers,
  splitBody,
  validateChunks,
  type Chunk,
  type Chunking,
  type Endpoint,
  type EndpointId,
  type Record_,
  type RequestOf,
  type ResponseOf,
} from '../api/index.js';
import { HTTPError } from './errors/http-error.js';
import { ValidationError } from './errors/validation-error.js';
import { resolveOptions, type ClientOptions } from './options.js';
import { pages, records } from './paging.js';
import { createTransport, send } from './transport.js';
import { isRecord } from '../api/objects.js';

type Endpoints = typeof ENDPOINTS;
type Group = Endpoints[EndpointId]['group'];

/** Endpoints whose body may be left out (every member optional). */
type Caller<Id extends EndpointId> =
  Record<never, never> extends RequestOf<Id> ? (body?: RequestOf<Id>) => Promise<ResponseOf<Id>> : (body: RequestOf<Id>) => Promise<ResponseOf<Id>>;

type GroupMethods<G extends Group> = {
  [Id in EndpointId as Endpoints[Id]['group'] extends G ? Endpoints[Id]['action'] : never]: Caller<Id>;
};

export interface Client {
  person: GroupMethods<'person'> & {
    /** every person matching `body` (filters, fields, sort), page after page */
    all(body?: RequestOf<'person/get'>): AsyncGenerator<Record_>;
    /** every page of `person/get` */
    pages(body?: RequestOf<'person/get'>): AsyncGenerator<ResponseOf<'person/get'>>;
  };
  accounts: GroupMethods<'accounts'>;
  organizations: GroupMethods<'organizations'> & {
    all(body?: RequestOf<'organizations/get'>): AsyncGenerator<Record_>;
    pages(body?: RequestOf<'organizations/get'>): AsyncGenerator<ResponseOf<'organizations/get'>>;
  };
  definitions: GroupMethods<'definitions'>;
  tags: GroupMethods<'tags'>;
  audience: GroupMethods<'audience'>;
  activities: GroupMethods<'activities'>;
  /** Calls endpoint `id` by name: `client.call('person/merge', body)`. */
  call<Id extends EndpointId>(id: Id, body?: RequestOf<Id>): Promise<ResponseOf<Id>>;
  /** the base address requests go to */
  readonly baseUrl: string;
}

/** Creates a client; throws `TypeError`/`RangeError` naming the option for bad options. */
export function createClient(options: ClientOptions): Client {
  const resolved = resolveOptions(options);
  const http = createTransport(resolved);

  async function call<Id extends EndpointId>(id: Id, body?: RequestOf<Id>): Promise<ResponseOf<Id>> {
    const endpoint = ENDPOINTS[id];
    if (!endpoint) throw new TypeError(`Unknown endpoint ${JSON.stringify(id)}`);
    const payload: Record<string, unknown> = body === undefined ? {} : (body as Record<string, unknown>);
    if (!isRecord(payload)) throw new ValidationError(id, [{ path: '', message: 'request body must be an object' }]);
    const chunking = 'chunking' in endpoint ? endpoint.chunking : undefined;
    const chunks: Chunk[] = chunking ? splitBody(payload, chunking) : [{ from: 0, count: 0, body: payload }];
    // Every chunk is checked before the first is sent: bad input sends nothing.
    if (resolved.validate) {
      const issues = validateChunks(id, chunks);
      if (issues.length > 0) throw new ValidationError(id, issues);
    }
    if (chunks.length === 1 || !chunking) return send<ResponseOf<Id>>(http, resolved, endpoint, chunks[0]!.body);
    const answers: unknown[] = [];
    for (const chunk of chunks) answers.push(await sendChunk(endpoint, chunking, chunk));
    return joinAnswers(chunking, answers) as ResponseOf<Id>;
  }

  /** One chunk of a larger call; a merge chunk whose entries all failed becomes that chunk's results. */
  async function sendChunk(endpoint: Endpoint, chunking: Chunking, chunk: Chunk): Promise<unknown> {
    try {
      return await send(http, resolved, endpoint, chunk.body);
    } catch (error) {
      const entries = error instanceof HTTPError ? failedEntries(chunking, chunk, error.status, error.body) : undefined;
      if (entries === undefined) throw error;
      return entries;
    }
  }

  const client: Record<string, unknown> = { call, baseUrl: resolved.baseUrl };
  for (const endpoint of ENDPOINT_LIST) {
    client[endpoint.group] ??= {};
    const group = client[endpoint.group] as Record<string, unknown>;
    group[endpoint.action] = (body?: unknown) => call(endpoint.id, body as never);
  }
  const person = client['person'] as Record<string, unknown>;
  person['pages'] = (body?: RequestOf<'person/get'>) => pages((b) => call('person/get', b), body);
  person['all'] = (body?: RequestOf<'person/get'>) =>
    records(
      pages((b) => call('person/get', b), body),
      (page) => page.contacts,
    );
  const organizations = client['organizations'] as Record<string, unknown>;
  organizations['pages'] = (body?: RequestOf<'organizations/get'>) => pages((b) => call('organizations/get', b), body);
  organizations['all'] = (body?: RequestOf<'organizations/get'>) =>
    records(
      pages((b) => call('organizations/get', b), body),
      (page) => page.organizations,
    );
  return client as unknown as Client;
}
