/** Request bodies of the account and organization endpoints. */
import * as v from 'valibot';
import { ACCOUNT_ID_ALIASES } from '../fields.js';
import { LIMITS } from '../limits.js';
import { fieldIdOf, fieldsOf, id, itemFields, mergeStrategy, paging, tagList } from './common.js';
import { CONTACTS_LINK_FILTER_OPERATORS, filterOf, ORGANIZATION_FILTER_OPERATORS } from './filter.js';
import { fieldList, items, selectable } from './people.js';

const isAccountId = (key: string) => (ACCOUNT_ID_ALIASES as readonly string[]).includes(key);

const accountsMergeWith = <F extends v.GenericSchema>(fields: F) =>
  v.looseObject({
    accounts: items(v.looseObject({ fields, tags: v.optional(tagList), unset_tags: v.optional(tagList) }), 'accounts'),
    async: v.optional(v.boolean('async must be true or false')),
    merge_by: v.pipe(
      v.array(v.union([fieldIdOf('account'), v.literal('accounts_id')]), 'merge_by is mandatory for accounts: an array of 1 or 2 field IDs'),
      v.minLength(1, 'merge_by: at least one field ID (accounts have no default)'),
      v.maxLength(LIMITS.mergeByAccounts, `merge_by: at most ${LIMITS.mergeByAccounts} field IDs for accounts`),
      v.check((keys) => !keys.some(isAccountId) || keys.length === 1, 'merge_by: the account ID field must be the only entry'),
    ),
    merge_strategy: mergeStrategy,
    find_strategy: v.optional(v.picklist([0, 1], 'find_strategy must be 0 (any) or 1 (next only if previous empty) for accounts')),
  });

export const accountsMerge = accountsMergeWith(fieldsOf('account'));
/** accounts/merge with each account's `fields` shape-checked only (see `itemFields`). */
export const accountsMergeEnvelope = accountsMergeWith(itemFields());

export const contactsLink = v.pipe(
  v.looseObject({
    accounts_id: v.optional(id),
    account_id: v.optional(v.union([id, v.pipe(v.array(id), v.length(1, 'account_id: exactly one account'))])),
    inclusion_ids: v.optional(
      v.pipe(v.array(id), v.maxLength(LIMITS.peoplePerAccount, `inclusion_ids: at most ${LIMITS.peoplePerAccount} people per account`)),
    ),
    filter: v.optional(filterOf(CONTACTS_LINK_FILTER_OPERATORS)),
  }),
  v.check((body) => body.accounts_id !== undefined || body.account_id !== undefined, 'accounts_id is required: the account to link people to'),
  v.check((body) => (body.inclusion_ids?.length ?? 0) > 0 || body.filter !== undefined, 'name the people with inclusion_ids or filter'),
);

export const organizationsGet = v.pipe(
  v.looseObject({
    ...paging,
    sort_by_field_id: v.optional(selectable('account')),
    fields: v.optional(fieldList('account')),
    inclusion_ids: v.optional(v.array(id)),
    exclusion_ids: v.optional(v.array(id)),
    type: v.optional(v.picklist(['', 'organization', 'archived_organization'], 'type must be "", "organization" or "archived_organization"')),
    organization_id: v.optional(id),
    filter: v.optional(filterOf(ORGANIZATION_FILTER_OPERATORS)),
  }),
  v.check((body) => body.type !== 'archived_organization' || body.filter === undefined, 'with type "archived_organization" only q is accepted (no filter)'),
);
