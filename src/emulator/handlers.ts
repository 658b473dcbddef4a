/**
 * One handler per endpoint ID: validates the body at the edge (src/api) and answers the
 * recorded response shape. The app routes every entry of ENDPOINT_LIST here.
 * @module
 */
import type { EndpointId } from '../api/index.js';
import { accountCustomFields, createCustomField, personCustomFields } from './fields.js';
import type { ResolvedOptions } from './options.js';
import { personMerge } from './people/merge.js';
import { personGet, personGetByIds } from './people/retrieve.js';
import type { Store } from './store.js';
import { checkBody, checkBodyExceptItemFields } from './validate.js';

export interface HandlerContext {
  store: Store;
  options: ResolvedOptions;
}

export type Handler = (ctx: HandlerContext, body: unknown, bytes: number) => unknown;

type Body = Parameters<typeof createCustomField>[2];

export const HANDLERS: Partial<Record<EndpointId, Handler>> = {
  'person/merge': ({ store, options }, body, bytes) => personMerge(store, options, checkBodyExceptItemFields('person/merge', body, 'people', bytes)),
  'person/get': ({ store }, body, bytes) => personGet(store, checkBody('person/get', body, bytes)),
  'person/get-by-ids': ({ store }, body, bytes) => personGetByIds(store, checkBody('person/get-by-ids', body, bytes)),
  'person/custom-field/create': ({ store }, body, bytes) => createCustomField(store, 'person', checkBody('person/custom-field/create', body, bytes) as Body),
  'person/custom-field/get': ({ store }, body, bytes) => (checkBody('person/custom-field/get', body, bytes), personCustomFields(store)),
  'accounts/custom-field/create': ({ store }, body, bytes) => createCustomField(store, 'account', checkBody('accounts/custom-field/create', body, bytes) as Body),
  'accounts/custom-field/get': ({ store }, body, bytes) => (checkBody('accounts/custom-field/get', body, bytes), accountCustomFields(store)),
  'organizations/custom-field/create': ({ store }, body, bytes) => createCustomField(store, 'account', checkBody('organizations/custom-field/create', body, bytes) as Body),
  'organizations/custom-field/get': ({ store }, body, bytes) => (checkBody('organizations/custom-field/get', body, bytes), accountCustomFields(store)),
};
