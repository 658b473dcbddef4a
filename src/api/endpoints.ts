/**
 * The endpoint table: all 29 method+path pairs of the spec, with the scope each needs,
 * its limits and the schema of its body. The client, the relay's proxy and the emulator
 * all read this one table.
 *
 * @example
 * const endpoint = ENDPOINTS['person/merge'];
 * endpoint.method // 'POST'; endpoint.path // '/v1/person/merge'; endpoint.scope // 'write'
 * findEndpoint('DELETE', '/v1/person/delete')?.id // 'person/delete'
 * @module
 */
import type { GenericSchema } from 'valibot';
import { LIMITS } from './limits.js';
import { selection } from './schemas/common.js';
import { audienceSubscribe, personGet, personGetByIds, personMerge, personSubscriptions } from './schemas/people.js';
import { accountsMerge, contactsLink, organizationsGet } from './schemas/accounts.js';
import {
  activitiesCreate,
  activityDefinitionCreate,
  activityDefinitionDelete,
  activityDefinitionModify,
  customFieldCreate,
  empty,
  tagsGet,
} from './schemas/definitions.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';
export type Scope = 'read' | 'write' | 'delete';
/** How the client groups methods: `client.person.merge(…)`, `client.accounts.archive(…)`. */
export type Group = 'person' | 'accounts' | 'organizations' | 'definitions' | 'tags' | 'audience' | 'activities';

/** How a call with too many items is split and its answers joined. */
export interface Chunking {
  /** the array in the request body that is split */
  items: 'people' | 'accounts' | 'activities' | 'inclusion_ids';
  /** at most this many per request */
  max: number;
  /** `concat`: the response array `result` is joined in order; `sum`: every integer is added up */
  join: { kind: 'concat'; result: 'people' | 'accounts' | 'activities' } | { kind: 'sum' };
}

export interface Endpoint<Id extends string = string, S extends GenericSchema = GenericSchema, G extends Group = Group, A extends string = string> {
  id: Id;
  method: Method;
  path: `/v1/${Id}`;
  scope: Scope;
  group: G;
  /** the client's method name in its group */
  action: A;
  summary: string;
  /** bytes of the request body */
  maxBytes: number;
  chunking?: Chunking;
  /** valibot schema of the request body */
  schema: S;
  /**
   * Whether sending the same call twice leaves the platform as sending it once did: reads,
   * merges by key, archive/restore/delete, links, subscriptions, modifications. Not so for
   * `activities/create` (a second call records the events again) and the create-definition
   * calls (a second one answers 409, so a retry hides whether the first applied). Clients retry
   * an idempotent call after an ambiguous failure (a timeout, a dropped connection, a 5xx), and
   * only those.
   */
  idempotent: boolean;
}

/** The calls that must not be repeated after an ambiguous failure (see `Endpoint.idempotent`). */
const APPLIED_ONCE: ReadonlySet<string> = new Set([
  'activities/create',
  'definitions/activity/create',
  'person/custom-field/create',
  'accounts/custom-field/create',
  'organizations/custom-field/create',
]);

const define = <const Id extends string, S extends GenericSchema, const G extends Group, const A extends string>(
  id: Id,
  method: Method,
  scope: Scope,
  group: G,
  action: A,
  summary: string,
  schema: S,
  chunking?: Chunking,
): Endpoint<Id, S, G, A> => {
  const endpoint: Endpoint<Id, S, G, A> = {
    id,
    method,
    path: `/v1/${id}`,
    scope,
    group,
    action,
    summary,
    maxBytes: LIMITS.payloadBytes,
    schema,
    idempotent: !APPLIED_ONCE.has(id),
  };
  if (chunking) endpoint.chunking = chunking;
  return endpoint;
};

const records = (join: Chunking['join'] = { kind: 'sum' }): Chunking => ({ items: 'inclusion_ids', max: LIMITS.recordsPerBatch, join });
const per100 = (items: 'people' | 'accounts' | 'activities'): Chunking => ({ items, max: LIMITS.itemsPerRequest, join: { kind: 'concat', result: items } });

/** Every endpoint of the spec's summary, keyed by its path without `/v1/`. */
export const ENDPOINTS = {
  'person/archive': define('person/archive', 'PUT', 'write', 'person', 'archive', 'archive people', selection, records()),
  'person/restore': define('person/restore', 'PUT', 'write', 'person', 'restore', 'restore archived people', selection, records()),
  'person/delete': define('person/delete', 'DELETE', 'delete', 'person', 'delete', 'delete archived people', selection, records()),
  'accounts/archive': define('accounts/archive', 'PUT', 'write', 'accounts', 'archive', 'archive accounts', selection, records()),
  'accounts/restore': define('accounts/restore', 'PUT', 'write', 'accounts', 'restore', 'restore accounts', selection, records()),
  'accounts/delete': define('accounts/delete', 'DELETE', 'delete', 'accounts', 'delete', 'delete accounts', selection, records()),
  'organizations/archive': define('organizations/archive', 'PUT', 'write', 'organizations', 'archive', 'archive organizations', selection, records()),
  'organizations/restore': define('organizations/restore', 'PUT', 'write', 'organizations', 'restore', 'restore organizations', selection, records()),
  'organizations/delete': define('organizations/delete', 'DELETE', 'delete', 'organizations', 'delete', 'delete organizations', selection, records()),
  'person/merge': define('person/merge', 'POST', 'write', 'person', 'merge', 'create or update people', personMerge, per100('people')),
  'accounts/merge': define('accounts/merge', 'POST', 'write', 'accounts', 'merge', 'create or update accounts', accountsMerge, per100('accounts')),
  'accounts/contacts/add': define('accounts/contacts/add', 'PUT', 'write', 'accounts', 'addContacts', 'link people to an account', contactsLink),
  'accounts/contacts/remove': define('accounts/contacts/remove', 'PUT', 'write', 'accounts', 'removeContacts', 'unlink people from an account', contactsLink),
  'person/get': define('person/get', 'POST', 'read', 'person', 'get', 'retrieve people', personGet),
  'person/get-by-ids': define('person/get-by-ids', 'POST', 'read', 'person', 'getByIds', 'retrieve people by ID', personGetByIds),
  'person/subscriptions': define(
    'person/subscriptions',
    'POST',
    'read',
    'person',
    'subscriptions',
    "retrieve people's subscription statuses",
    personSubscriptions,
    per100('people'),
  ),
  'organizations/get': define('organizations/get', 'POST', 'read', 'organizations', 'get', 'retrieve organizations', organizationsGet),
  'person/custom-field/create': define(
    'person/custom-field/create',
    'POST',
    'write',
    'person',
    'createCustomField',
    'create custom person field',
    customFieldCreate,
  ),
  'person/custom-field/get': define('person/custom-field/get', 'POST', 'read', 'person', 'getCustomFields', 'list custom person fields', empty),
  'accounts/custom-field/create': define(
    'accounts/custom-field/create',
    'POST',
    'write',
    'accounts',
    'createCustomField',
    'create custom account field',
    customFieldCreate,
  ),
  'accounts/custom-field/get': define('accounts/custom-field/get', 'POST', 'read', 'accounts', 'getCustomFields', 'list custom account fields', empty),
  'organizations/custom-field/create': define(
    'organizations/custom-field/create',
    'POST',
    'write',
    'organizations',
    'createCustomField',
    'create custom organization field',
    customFieldCreate,
  ),
  'organizations/custom-field/get': define(
    'organizations/custom-field/get',
    'POST',
    'read',
    'organizations',
    'getCustomFields',
    'list custom organization fields',
    empty,
  ),
  'definitions/activity/create': define(
    'definitions/activity/create',
    'POST',
    'write',
    'definitions',
    'createActivity',
    'create custom activity definition',
    activityDefinitionCreate,
  ),
  'definitions/activity/modify': define(
    'definitions/activity/modify',
    'PUT',
    'write',
    'definitions',
    'modifyActivity',
    'modify custom activity definition',
    activityDefinitionModify,
  ),
  'definitions/activity/delete': define(
    'definitions/activity/delete',
    'DELETE',
    'delete',
    'definitions',
    'deleteActivity',
    'archive custom activity definition',
    activityDefinitionDelete,
  ),
  'tags/get': define('tags/get', 'POST', 'read', 'tags', 'get', 'list tags', tagsGet),
  'audience/subscribe': define(
    'audience/subscribe',
    'PUT',
    'write',
    'audience',
    'subscribe',
    'set email/SMS permission in an audience',
    audienceSubscribe,
    per100('people'),
  ),
  'activities/create': define('activities/create', 'POST', 'write', 'activities', 'create', 'send activity events', activitiesCreate, per100('activities')),
} as const;

export type EndpointId = keyof typeof ENDPOINTS;
export const ENDPOINT_LIST: readonly Endpoint<EndpointId>[] = Object.values(ENDPOINTS) as Endpoint<EndpointId>[];

/** The endpoint served at exactly `method` + `path` (no normalisation: `/v1/person/get/` is not it). */
export function findEndpoint(method: string, path: string): Endpoint<EndpointId> | undefined {
  const id = path.startsWith('/v1/') ? path.slice(4) : undefined;
  if (id === undefined || !Object.hasOwn(ENDPOINTS, id)) return undefined;
  const endpoint: Endpoint<EndpointId> = ENDPOINTS[id as EndpointId];
  return endpoint.method === method.toUpperCase() ? endpoint : undefined;
}
