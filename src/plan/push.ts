/**
 * `plan diff` and `plan push`: bring a platform (directly, through the relay's proxy, or the
 * emulator) to the plan's custom fields and activity definitions, through the typed client.
 *
 * The spec lists custom fields (`person/custom-field/get`) but has no endpoint that lists
 * activity definitions, so what was pushed is remembered in a lock file, per target:
 * - an activity in the lock with the same body: unchanged, no call at all;
 * - in the lock with another body: `modify` (and `create` if the target answers 404: it lost it);
 * - not in the lock: `create`; a 409 (the name exists: made by hand, or the lock was lost)
 *   is answered with `modify`, which adopts the existing definition into the plan.
 * So a second push is free and changes nothing, and a push without the lock still converges.
 * @module
 */
import type { RequestOf } from '../api/index.js';
import { HTTPError, type Client } from '../client/index.js';
import { personFieldId, type Plan, type PlanActivity, type PlanPersonField } from './schema.js';

type DefinitionBody = RequestOf<'definitions/activity/create'>;

/** What was pushed to one target: activity ID -> the definition body sent. */
export interface LockTarget {
  activities: Record<string, DefinitionBody>;
}

/** The lock file (`cdp-edge.plan.lock.json`): per target base URL, what push last sent. Commit it. */
export interface Lock {
  version: 1;
  targets: Record<string, LockTarget>;
}

export const emptyLock = (): Lock => ({ version: 1, targets: {} });

export type Change = 'created' | 'modified' | 'unchanged';

export interface PushStep {
  kind: 'person field' | 'activity';
  id: string;
  change: Change;
  /** why: for an adopted activity or a field that cannot be changed through the API */
  note?: string;
}

export interface PushSummary {
  steps: PushStep[];
  created: number;
  modified: number;
  unchanged: number;
}

/** The definition-create body of an activity: the spec's names, attributes unmapped unless `maps_to`. */
export function definitionBody(activity: PlanActivity): DefinitionBody {
  const body: DefinitionBody = { name: activity.name };
  if (activity.icon !== undefined) body.icon_id = activity.icon;
  if (activity.touch !== undefined) body.touch = activity.touch;
  if (activity.track_conversion_value !== undefined) body.track_conversion_value = activity.track_conversion_value;
  if (activity.filterable !== undefined) body.filterable = activity.filterable;
  if (activity.visible_in_feeds !== undefined) body.visible_in_feeds = activity.visible_in_feeds;
  if (activity.display_style !== undefined) body.display_style = activity.display_style;
  body.attributes = (activity.attributes ?? []).map((attribute) => ({
    name: attribute.name,
    display_type: attribute.type,
    field_id: attribute.maps_to ?? 'do-not-map',
  }));
  return body;
}

function fieldBody(field: PlanPersonField): RequestOf<'person/custom-field/create'> {
  const body: RequestOf<'person/custom-field/create'> = { name: field.name, type: field.type };
  if (field.values !== undefined) body.values = field.values;
  if (field.track_changes !== undefined) body.track_changes = field.track_changes;
  return body;
}

export interface PushOptions {
  client: Client;
  /** the target's base URL: the lock's key */
  target: string;
  lock: Lock;
  /** false: only work out what would change (`plan diff`) */
  write: boolean;
  /** called after every item (a progress line), and after every write with the lock to save */
  onStep?: (step: PushStep, lock: Lock) => void | Promise<void>;
}

const statusOf = (error: unknown) => (error instanceof HTTPError ? error.status : undefined);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Diffs (write: false) or pushes (write: true) the plan; throws on the first failed call, after saving what succeeded. */
export async function pushPlan(plan: Plan, options: PushOptions): Promise<PushSummary> {
  const { client, target, lock, write } = options;
  const summary: PushSummary = { steps: [], created: 0, modified: 0, unchanged: 0 };
  const record = async (step: PushStep) => {
    summary.steps.push(step);
    summary[step.change] += 1;
    await options.onStep?.(step, lock);
  };

  const existing = new Map((await client.person.getCustomFields()).fields.map(({ field }) => [field.id, field]));
  for (const field of plan.person_fields ?? []) {
    const id = personFieldId(field);
    const found = existing.get(id);
    if (found) {
      if (found.display_type !== field.type) {
        throw new Error(`person field ${id} is ${found.display_type} on the target but ${field.type} in the plan; the API cannot change a field's type`);
      }
      const missing = (field.values ?? []).filter((value) => !(found.dic_items ?? []).includes(value));
      const note =
        missing.length > 0 ? `values ${missing.join(', ')} are missing on the target; the API cannot add them (edit the field in the product)` : undefined;
      await record(note ? { kind: 'person field', id, change: 'unchanged', note } : { kind: 'person field', id, change: 'unchanged' });
      continue;
    }
    if (write) await client.person.createCustomField(fieldBody(field));
    await record({ kind: 'person field', id, change: 'created' });
  }

  lock.targets[target] ??= { activities: {} };
  const pushed = lock.targets[target].activities;
  for (const activity of plan.activities) {
    const body = definitionBody(activity);
    const before = pushed[activity.id];
    if (before && same(before, body)) {
      await record({ kind: 'activity', id: activity.id, change: 'unchanged' });
      continue;
    }
    let change: Change = before ? 'modified' : 'created';
    let note: string | undefined;
    if (write) {
      try {
        if (before) await client.definitions.modifyActivity({ ...body, activity_field_id: activity.id });
        else await client.definitions.createActivity(body);
      } catch (error) {
        if (before && statusOf(error) === 404) {
          await client.definitions.createActivity(body);
          change = 'created';
          note = 'the target no longer had it';
        } else if (!before && statusOf(error) === 409) {
          await client.definitions.modifyActivity({ ...body, activity_field_id: activity.id });
          change = 'modified';
          note = 'it existed already; adopted into the plan';
        } else throw error;
      }
      pushed[activity.id] = body;
    }
    await record(note ? { kind: 'activity', id: activity.id, change, note } : { kind: 'activity', id: activity.id, change });
  }
  return summary;
}

/** The last line of `plan push` / `plan diff`. */
export const summaryLine = (command: 'push' | 'diff', summary: PushSummary): string =>
  `plan ${command}: created ${summary.created}, modified ${summary.modified}, unchanged ${summary.unchanged}`;

/**
 * Puts the plan's fields and definitions into a fresh target (the emulator at start-up, the demo),
 * without a lock: what exists already is adopted (create's 409 answered with modify).
 */
export const seedPlan = (client: Client, plan: Plan): Promise<PushSummary> => pushPlan(plan, { client, target: 'seed', lock: emptyLock(), write: true });
