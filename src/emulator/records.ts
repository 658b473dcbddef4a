/**
 * The records the emulator keeps (store.ts holds them): people with their memberships, events and
 * location, accounts, custom fields and audiences.
 * @module
 */

/** Where a person was last located (custom data, IP, or address lookup). */
export interface PersonLocation {
  source: 'custom' | 'ip' | 'address';
  country_name?: string;
  region_name?: string;
  city_name?: string;
  position_name?: string;
  lat?: number;
  lng?: number;
  /** the last `source_ip` seen, kept apart so proximity can prefer it (spec, location rule 4) */
  ip?: { address: string; country_name?: string; region_name?: string; city_name?: string; lat?: number; lng?: number };
}

export interface Membership {
  member_from: string;
  /** email permission in this audience */
  subscribed: boolean;
  subscribed_from: string;
  sms_opted_in: boolean;
}

export interface ActivityEvent {
  activity_id: string;
  person_id: string;
  attributes: Record<string, unknown>;
  /** event time (ISO), from the request's `created` or the receipt time */
  created: string;
  /** receipt time in ms: the 50-per-24-h rule counts by it */
  received: number;
}

export interface Person {
  id: string;
  seq: number;
  fields: Record<string, unknown>;
  tags: number[];
  archived: boolean;
  accountId: string | null;
  location: PersonLocation | null;
  audiences: Record<string, Membership>;
  events: ActivityEvent[];
  created_at: string;
  updated_at: string;
}

export interface Account {
  id: string;
  seq: number;
  fields: Record<string, unknown>;
  tags: number[];
  archived: boolean;
  /** IDs of the people linked to this account */
  members: Set<string>;
  created_at: string;
  updated_at: string;
}

export interface CustomField {
  id: string;
  name: string;
  display_type: string;
  liquid_name: string;
  dic_items?: string[];
  track_changes: boolean;
}

export interface Audience {
  id: string;
  name: string;
}
