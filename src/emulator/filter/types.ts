/** What a compiled filter reads from a record, so one engine serves people and organizations. */
import type { ActivityEvent, Membership } from '../records.js';

export type Predicate<R> = (record: R) => boolean;

export interface FilterEnv<R> {
  /** the record's own ID */
  id(record: R): string;
  /** a field's value (`tags` and `u4s::t` included); undefined or null when empty */
  value(record: R, fieldId: string): unknown;
  /** the point proximity filters use (IP preferred over custom data, location rule 4) */
  point?(record: R): { lat: number; lng: number } | undefined;
  /** the record's membership of an audience */
  membership?(record: R, audienceId: string): Membership | undefined;
  /** the record's events of an activity, oldest first */
  events?(record: R, activityId: string): readonly ActivityEvent[];
  now(): number;
}

/** The body of one operator: `{field_id, value}` (more members allowed). */
export interface Condition {
  field_id?: string;
  value?: unknown;
  [key: string]: unknown;
}

export type OperatorBuilder = <R>(condition: Condition, env: FilterEnv<R>, operator: string) => Predicate<R>;
