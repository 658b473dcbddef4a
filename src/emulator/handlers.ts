/**
 * One handler per endpoint ID: validates the body at the edge (src/api) and answers the
 * recorded response shape. The app routes every entry of ENDPOINT_LIST here.
 * @module
 */
import type { EndpointId } from '../api/index.js';
import { accountsMerge, contactsAdd, contactsRemove, organizationsGet } from './accounts.js';
import { activitiesCreate } from './activities.js';
import { audienceSubscribe, personSubscriptions } from './audiences.js';
import { createDefinition, deleteDefinition, modifyDefinition } from './definitions.js';
import { accountCustomFields, createCustomField, personCustomFields } from './fields.js';
import { lifecycle, type Operation } from './lifecycle.js';
import type { ResolvedOptions } from './options.js';
import { personMerge } from './people/merge.js';
import { personGet, personGetByIds } from './people/retrieve.js';
import type { Store } from './store.js';
import { tagsGet } from './tags.js';
import { checkBody, checkBodyExceptItemFields } from './validate.js';

export interface HandlerContext {
  store: Store;
  options: ResolvedOptions;
}

export type Handler = (ctx: HandlerContext, body: unknown, bytes: number) => unknown;

// The validated bodies are narrowed by each module; `any` here only bridges valibot's output types.

type Loose = any;

const selection =
  (id: EndpointId, kind: 'person' | 'account', operation: Operation): Handler =>
  ({ store }, body, bytes) =>
    lifecycle(store, kind, operation, checkBody(id, body, bytes));

const customField =
  (id: EndpointId, kind: 'person' | 'account'): Handler =>
  ({ store }, body, bytes) =>
    createCustomField(store, kind, checkBody(id, body, bytes) as Loose);

export const HANDLERS: Record<EndpointId, Handler> = {
  'person/archive': selection('person/archive', 'person', 'archive'),
  'person/restore': selection('person/restore', 'person', 'restore'),
  'person/delete': selection('person/delete', 'person', 'delete'),
  'accounts/archive': selection('accounts/archive', 'account', 'archive'),
  'accounts/restore': selection('accounts/restore', 'account', 'restore'),
  'accounts/delete': selection('accounts/delete', 'account', 'delete'),
  'organizations/archive': selection('organizations/archive', 'account', 'archive'),
  'organizations/restore': selection('organizations/restore', 'account', 'restore'),
  'organizations/delete': selection('organizations/delete', 'account', 'delete'),
  'person/merge': ({ store, options }, body, bytes) => personMerge(store, options, checkBodyExceptItemFields('person/merge', body, 'people', bytes)),
  'accounts/merge': ({ store }, body, bytes) => accountsMerge(store, checkBodyExceptItemFields('accounts/merge', body, 'accounts', bytes)),
  'accounts/contacts/add': ({ store }, body, bytes) => contactsAdd(store, checkBody('accounts/contacts/add', body, bytes)),
  'accounts/contacts/remove': ({ store }, body, bytes) => contactsRemove(store, checkBody('accounts/contacts/remove', body, bytes)),
  'person/get': ({ store }, body, bytes) => personGet(store, checkBody('person/get', body, bytes)),
  'person/get-by-ids': ({ store }, body, bytes) => personGetByIds(store, checkBody('person/get-by-ids', body, bytes)),
  'person/subscriptions': ({ store }, body, bytes) => personSubscriptions(store, checkBody('person/subscriptions', body, bytes)),
  'organizations/get': ({ store }, body, bytes) => organizationsGet(store, checkBody('organizations/get', body, bytes)),
  'person/custom-field/create': customField('person/custom-field/create', 'person'),
  'person/custom-field/get': ({ store }, body, bytes) => (checkBody('person/custom-field/get', body, bytes), personCustomFields(store)),
  'accounts/custom-field/create': customField('accounts/custom-field/create', 'account'),
  'accounts/custom-field/get': ({ store }, body, bytes) => (checkBody('accounts/custom-field/get', body, bytes), accountCustomFields(store)),
  'organizations/custom-field/create': customField('organizations/custom-field/create', 'account'),
  'organizations/custom-field/get': ({ store }, body, bytes) => (checkBody('organizations/custom-field/get', body, bytes), accountCustomFields(store)),
  'definitions/activity/create': ({ store }, body, bytes) => createDefinition(store, checkBody('definitions/activity/create', body, bytes) as Loose),
  'definitions/activity/modify': ({ store }, body, bytes) => modifyDefinition(store, checkBody('definitions/activity/modify', body, bytes) as Loose),
  'definitions/activity/delete': ({ store }, body, bytes) => deleteDefinition(store, checkBody('definitions/activity/delete', body, bytes) as Loose),
  'tags/get': ({ store, options }, body, bytes) => tagsGet(store, options.instanceId, checkBody('tags/get', body, bytes)),
  'audience/subscribe': ({ store }, body, bytes) => audienceSubscribe(store, checkBody('audience/subscribe', body, bytes)),
  'activities/create': ({ store, options }, body, bytes) =>
    activitiesCreate(store, options, checkBodyExceptItemFields('activities/create', body, 'activities', bytes)),
};
