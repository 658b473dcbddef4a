/**
 * `$act::*` operators read a person's activity history (events of `activities/create`).
 * Payload (not shown by the spec; ours): `{field_id: "act:cm:<name>", value?: {within_days?,
 * after?, before?, attributes?: {<attribute field ID>: value}}}`. `has_occurred` = some event
 * meets the conditions; `has_not_occurred` = none does; `first`/`last` = the first/last event does.
 */
import type { ActivityEvent } from '../records.js';
import type { OperatorBuilder } from './types.js';
import { badValue, fieldOf } from './util.js';

type EventTest = (event: ActivityEvent) => boolean;

function eventTest(value: unknown, op: string, now: () => number): EventTest {
  if (value === undefined || value === null) return () => true;
  if (typeof value !== 'object' || Array.isArray(value)) badValue(op, 'an object {within_days?, after?, before?, attributes?}');
  const { within_days: withinDays, after, before, attributes } = value as Record<string, unknown>;
  const time = (v: unknown, name: string) => {
    if (v === undefined) return undefined;
    const ms = typeof v === 'string' ? Date.parse(v) : NaN;
    return Number.isNaN(ms) ? badValue(op, `${name} as an ISO time`) : ms;
  };
  const afterMs = time(after, 'after');
  const beforeMs = time(before, 'before');
  if (withinDays !== undefined && (typeof withinDays !== 'number' || withinDays < 0)) badValue(op, 'within_days as a number of days');
  if (attributes !== undefined && (typeof attributes !== 'object' || attributes === null)) badValue(op, 'attributes as an object');
  return (event) => {
    const at = Date.parse(event.created);
    if (withinDays !== undefined && at < now() - (withinDays as number) * 86_400_000) return false;
    if (afterMs !== undefined && at <= afterMs) return false;
    if (beforeMs !== undefined && at >= beforeMs) return false;
    for (const [id, wanted] of Object.entries((attributes as Record<string, unknown> | undefined) ?? {})) {
      if (JSON.stringify(event.attributes[id]) !== JSON.stringify(wanted)) return false;
    }
    return true;
  };
}

const build =
  (pick: (events: readonly ActivityEvent[], test: EventTest) => boolean): OperatorBuilder =>
  (c, env, op) => {
    const activity = fieldOf(c, op);
    if (!activity.startsWith('act:')) badValue(op, 'used with an activity field_id (act:cm:<name>)');
    const test = eventTest(c.value, op, env.now);
    return (r) => pick(env.events?.(r, activity) ?? [], test);
  };

export const ACTIVITY_OPERATORS: Record<string, OperatorBuilder> = {
  '$act::has_occurred': build((events, test) => events.some(test)),
  '$act::has_not_occurred': build((events, test) => !events.some(test)),
  '$act::first': build((events, test) => events.length > 0 && test(events[0]!)),
  '$act::last': build((events, test) => events.length > 0 && test(events[events.length - 1]!)),
};
