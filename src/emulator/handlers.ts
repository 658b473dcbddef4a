/**
 * One handler per endpoint ID: validates the body at the edge (src/api) and answers the
 * recorded response shape. The app routes every entry of ENDPOINT_LIST here.
 * @module
 */
import type { EndpointId, ResponseOf } from '../api/index.js';
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
import { checkBody, checkEnvelope } from './validate.js';

export interface HandlerContext {
  store: Store;
  options: ResolvedOptions;
}

/** Answers endpoint `Id`: the compiler holds every handler to that endpoint's response type in src/api. */
export type Handler<Id extends EndpointId> = (ctx: HandlerContext, body: unknown, bytes: number) => ResponseOf<Id>;

type SelectionId =
  | 'person/archive'
  | 'person/restore'
  | 'person/delete'
  | 'accounts/archive'
  | 'accounts/restore'
  | 'accounts/delete'
  | 'organizations/archive'
  | 'organizations/restore'
  | 'organizations/delete';

const selection =
  <Id extends SelectionId>(id: Id, kind: 'person' | 'account', operation: Operation): Handler<Id> =>
  ({ store }, body, bytes) =>
    lifecycle(store, kind, operation, checkBody(id, body, bytes));

type CustomFieldId = 'person/custom-field/create' | 'accounts/custom-field/create' | 'organizations/custom-field/create';

const customField =
  <Id extends CustomFieldId>(id: Id, kind: 'person' | 'account'): Handler<Id> =>
  ({ store }, body, bytes) =>
    createCustomField(store, kind, checkBody(id, body, bytes));

/** A body-less listing: the body is still checked (an unknown member is fine, a non-object is not). */
const listing =
  <Id extends 'person/custom-field/get' | 'accounts/custom-field/get' | 'organizations/custom-field/get'>(
    id: Id,
    list: (store: Store) => ResponseOf<Id>,
  ): Handler<Id> =>
  ({ store }, body, bytes) => {
    checkBody(id, body, bytes);
    return list(store);
  };

export const HANDLERS: { [Id in EndpointId]: Handler<Id> } = {
  'person/archive': selection('person/archive', 'person', 'archive'),
  'person/restore': selection('person/restore', 'person', 'restore'),
  'person/delete': selection('person/delete', 'person', 'delete'),
  'accounts/archive': selection('accounts/archive', 'account', 'archive'),
  'accounts/restore': selection('accounts/restore', 'account', 'restore'),
  'accounts/delete': selection('accounts/delete', 'account', 'delete'),
  'organizations/archive': selection('organizations/archive', 'account', 'archive'),
  'organizations/restore': selection('organizations/restore', 'account', 'restore'),
  'organizations/delete': selection('organizations/delete', 'account', 'delete'),
  'person/merge': ({ store, options }, body, bytes) => personMerge(store, options, checkEnvelope('person/merge', body, bytes)),
  'accounts/merge': ({ store }, body, bytes) => accountsMerge(store, checkEnvelope('accounts/merge', body, bytes)),
  'accounts/contacts/add': ({ store }, body, bytes) => contactsAdd(store, checkBody('accounts/contacts/add', body, bytes)),
  'accounts/contacts/remove': ({ store }, body, bytes) => contactsRemove(store, checkBody('accounts/contacts/remove', body, bytes)),
  'person/get': ({ store }, body, bytes) => personGet(store, checkBody('person/get', body, bytes)),
  'person/get-by-ids': ({ store }, body, bytes) => personGetByIds(store, checkBody('person/get-by-ids', body, bytes)),
  'person/subscriptions': ({ store }, body, bytes) => personSubscriptions(store, checkBody('person/subscriptions', body, bytes)),
  'organizations/get': ({ store }, body, bytes) => organizationsGet(store, checkBody('organizations/get', body, bytes)),
  'person/custom-field/create': customField('person/custom-field/create', 'person'),
  'person/custom-field/get': listing('person/custom-field/get', personCustomFields),
  'accounts/custom-field/create': customField('accounts/custom-field/create', 'account'),
  'accounts/custom-field/get': listing('accounts/custom-field/get', accountCustomFields),
  'organizations/custom-field/create': customField('organizations/custom-field/create', 'account'),
  'organizations/custom-field/get': listing('organizations/custom-field/get', accountCustomFields),
  'definitions/activity/create': ({ store }, body, bytes) => createDefinition(store, checkBody('definitions/activity/create', body, bytes)),
  'definitions/activity/modify': ({ store }, body, bytes) => modifyDefinition(store, checkBody('definitions/activity/modify', body, bytes)),
  'definitions/activity/delete': ({ store }, body, bytes) => deleteDefinition(store, checkBody('definitions/activity/delete', body, bytes)),
  'tags/get': ({ store, options }, body, bytes) => tagsGet(store, options.instanceId, checkBody('tags/get', body, bytes)),
  'audience/subscribe': ({ store }, body, bytes) => audienceSubscribe(store, checkBody('audience/subscribe', body, bytes)),
  'activities/create': ({ store, options }, body, bytes) => activitiesCreate(store, options, checkEnvelope('activities/create', body, bytes)),
};
