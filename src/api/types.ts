/**
 * Request and response types of every endpoint. Requests are inferred from the valibot
 * schemas (one source of truth); responses follow the shapes in docs/platform.md.
 * @module
 */
import type { InferInput } from 'valibot';
import type { ENDPOINTS, EndpointId } from './endpoints.js';
import type { DateValue, GeoValue, PhoneValue } from './values.js';

/** The body a caller sends to endpoint `Id`. */
export type RequestOf<Id extends EndpointId> = InferInput<(typeof ENDPOINTS)[Id]['schema']>;

export type FieldValue = string | number | boolean | null | PhoneValue | GeoValue | DateValue | number[] | Record<string, unknown>;
export type Fields = Record<string, FieldValue | unknown>;

export interface Location {
  source_ip?: string;
  custom?: { country_name?: string; region_name?: string; city_name?: string; position_name?: string; lat?: number; lng?: number };
  address?: { address: string; postal_code?: string; country?: string; boost_region?: string; language?: string };
}

export type MergeStatus = 'created' | 'merged' | 'invalid' | 'suppressed';

export interface PersonMergeResult {
  person_id?: string;
  status: MergeStatus;
  error?: string;
}
export interface PersonMergeResponse {
  people?: PersonMergeResult[];
  /** async merges answer with a confirmation instead of results */
  queued?: number;
  status?: string;
}

export interface AccountMergeResult {
  account_id?: string;
  status: MergeStatus;
  error?: string;
}
export interface AccountsMergeResponse {
  accounts?: AccountMergeResult[];
  queued?: number;
  status?: string;
}

export interface ActivityResult {
  person_id?: string;
  status: 'queued' | 'invalid' | string;
  person_status?: 'queued' | string;
  error?: string;
}
export interface ActivitiesCreateResponse {
  activities: ActivityResult[];
}

export interface RetrievalMeta {
  total_contacts: number;
  total_organizations: number;
  total_matches: number;
  total_subscribers: number;
}
export interface Record_ {
  id: string;
  fields?: Fields;
}
export interface PersonGetResponse {
  contacts: Record_[] | null;
  meta: RetrievalMeta;
  offset: number;
  next_offset: number;
  cursor_id: string;
  has_more: boolean;
}
export interface OrganizationsGetResponse {
  organizations: Record_[] | null;
  meta: RetrievalMeta;
  offset: number;
  next_offset: number;
  cursor_id: string;
  has_more: boolean;
}
export interface PersonGetByIdsResponse {
  contacts: Record<string, { id: string; fields: Fields }>;
}

export interface AudienceSubscriptionRecord {
  audience_id: string;
  audience_name: string;
  member_from: string;
  subscribed: boolean;
  subscribed_from: string;
  sms_opted_in: boolean;
}
export interface PersonSubscriptionsResponse {
  people: Array<{
    person_status: string;
    person_id?: string;
    email?: string;
    subscriptions: AudienceSubscriptionRecord[];
    email_permissions: boolean;
    sms_permissions: boolean;
  }>;
}

export interface AudienceSubscribeResponse {
  audience_id: string;
  people: Array<{ person_status: string; status: 'subscribed' | 'unsubscribed' | 'not_member' | string; person_id?: string; error?: string }>;
}

/** Counts of archive/restore/delete: e.g. `{scheduled_contacts, archived_contacts}`. */
export type RecordCounts = Record<string, number>;

export interface CustomFieldDefinition {
  id: string;
  name: string;
  display_type: string;
  liquid_name: string;
  dic_items?: string[];
}
export interface PersonCustomFieldsResponse {
  fields: Array<{ field: CustomFieldDefinition; tracked_value: boolean }>;
}
export interface AccountCustomFieldsResponse {
  fields: CustomFieldDefinition[];
}
export interface CustomFieldCreateResponse {
  name: string;
  field_id: string;
  display_type: string;
  values?: string[];
  track_changes: boolean;
}

export interface ActivityAttributeDefinition {
  name: string;
  field_id: string;
  cdp_field_id?: string;
  display_type: string;
  liquid_name: string;
}
export interface ActivityDefinition {
  name: string;
  activity_field_id: string;
  state: 'awaiting_implementation' | 'live' | 'archived';
  icon_id: string;
  track_conversion_value: boolean;
  touch: boolean;
  filterable: boolean;
  visible_in_feeds: boolean;
  display_mode: { type: string; attribute_name?: string; attribute_field_id?: string };
  attributes: ActivityAttributeDefinition[];
  created_by: string;
  created_at: string;
  edited_at: string;
}
export interface ActivityDefinitionResponse {
  custom_activity: ActivityDefinition;
}
export interface ActivityDefinitionDeleteResponse {
  archived_activity: string;
}

export interface Tag {
  id: number;
  instance_id: string;
  name: string;
  source: string;
  created_by_id: string;
  created_by_name: string;
  created_by_email: string;
  created_at: string;
  last_used: string;
  count: number;
  sms_opted_in: number;
  subscribers: number;
  /** '' for person tags; recordings say `organization` for account tags */
  type: string;
}

/** The body endpoint `Id` answers with on success. */
export interface ResponseMap {
  'person/archive': RecordCounts;
  'person/restore': RecordCounts;
  'person/delete': RecordCounts;
  'accounts/archive': RecordCounts;
  'accounts/restore': RecordCounts;
  'accounts/delete': RecordCounts;
  'organizations/archive': RecordCounts;
  'organizations/restore': RecordCounts;
  'organizations/delete': RecordCounts;
  'person/merge': PersonMergeResponse;
  'accounts/merge': AccountsMergeResponse;
  'accounts/contacts/add': Record<string, never>;
  'accounts/contacts/remove': Record<string, never>;
  'person/get': PersonGetResponse;
  'person/get-by-ids': PersonGetByIdsResponse;
  'person/subscriptions': PersonSubscriptionsResponse;
  'organizations/get': OrganizationsGetResponse;
  'person/custom-field/create': CustomFieldCreateResponse;
  'person/custom-field/get': PersonCustomFieldsResponse;
  'accounts/custom-field/create': CustomFieldCreateResponse;
  'accounts/custom-field/get': AccountCustomFieldsResponse;
  'organizations/custom-field/create': CustomFieldCreateResponse;
  'organizations/custom-field/get': AccountCustomFieldsResponse;
  'definitions/activity/create': ActivityDefinitionResponse;
  'definitions/activity/modify': ActivityDefinitionResponse;
  'definitions/activity/delete': ActivityDefinitionDeleteResponse;
  'tags/get': Tag[];
  'audience/subscribe': AudienceSubscribeResponse;
  'activities/create': ActivitiesCreateResponse;
}

export type ResponseOf<Id extends EndpointId> = ResponseMap[Id];
