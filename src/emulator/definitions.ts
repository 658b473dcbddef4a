/**
 * Custom activity definitions: create (state `awaiting_implementation`, `created_by`
 * "Public API"), modify, and delete (which archives: events for it are then refused).
 * @module
 */
import {
  activityFieldId,
  customFieldId,
  isFieldId,
  parseFieldId,
  type ActivityAttributeDefinition,
  type ActivityDefinition,
  type CustomFieldType,
  type ResponseMap,
} from '../api/index.js';
import { fail, PlatformHttpError } from './errors.js';
import { FIELD_TYPE_OF } from './fields.js';
import type { Store } from './store.js';

interface AttributeInput {
  name: string;
  display_type: CustomFieldType | 'email';
  field_id?: string | undefined;
}

interface DefinitionInput {
  name?: string | undefined;
  icon_id?: string | undefined;
  track_conversion_value?: boolean | undefined;
  touch?: boolean | undefined;
  filterable?: boolean | undefined;
  visible_in_feeds?: boolean | undefined;
  visible_in_fields?: boolean | undefined;
  display_style?: { type: string; title?: string | undefined; attribute_name?: string | undefined; attribute_field_id?: string | undefined } | undefined;
  attributes?: AttributeInput[] | undefined;
  state?: 'awaiting_implementation' | 'live' | undefined;
}

const slugOf = (name: string) => parseFieldId(customFieldId('str', 'person', name))!.name;
const snake = (slug: string) => slug.replace(/-/g, '_');

function attributes(activitySlug: string, inputs: AttributeInput[]): ActivityAttributeDefinition[] {
  const seen = new Set<string>();
  return inputs.map((input) => {
    const fieldId = customFieldId(FIELD_TYPE_OF[input.display_type], 'person', input.name);
    if (seen.has(fieldId)) fail(`attributes: two attributes are named ${JSON.stringify(input.name)}; names must be unique within an activity`);
    seen.add(fieldId);
    const out: ActivityAttributeDefinition = {
      name: input.name,
      field_id: fieldId,
      display_type: input.display_type,
      liquid_name: `activity.custom.${snake(activitySlug)}.${snake(slugOf(input.name))}`,
    };
    // '' = no value, 'do-not-map' = not mapped; a field ID fills the attribute from that person field
    if (input.field_id && input.field_id !== 'do-not-map' && isFieldId(input.field_id)) out.cdp_field_id = input.field_id;
    return out;
  });
}

function displayMode(style: DefinitionInput['display_style']): ActivityDefinition['display_mode'] {
  const mode: ActivityDefinition['display_mode'] = { type: style?.type ?? 'activity' };
  if (style?.attribute_name !== undefined) mode.attribute_name = style.attribute_name;
  if (style?.attribute_field_id !== undefined) mode.attribute_field_id = style.attribute_field_id;
  return mode;
}

function assertUniqueName(store: Store, name: string, except?: string): void {
  for (const definition of store.activities.values()) {
    if (definition.activity_field_id !== except && definition.name.toLowerCase() === name.toLowerCase()) {
      throw new PlatformHttpError(
        409,
        `An activity named ${JSON.stringify(definition.name)} already exists (${definition.activity_field_id}); names must be unique`,
      );
    }
  }
}

export function createDefinition(store: Store, body: DefinitionInput & { name: string }): ResponseMap['definitions/activity/create'] {
  assertUniqueName(store, body.name);
  const slug = slugOf(body.name);
  const id = activityFieldId(slug);
  if (store.activities.has(id)) throw new PlatformHttpError(409, `An activity with field ID ${id} already exists (it may be archived); choose another name`);
  const now = store.nowIso();
  const definition: ActivityDefinition = {
    name: body.name,
    activity_field_id: id,
    state: 'awaiting_implementation',
    icon_id: body.icon_id ?? 'happy-illustration-icon',
    track_conversion_value: body.track_conversion_value ?? false,
    touch: body.touch ?? false,
    filterable: body.filterable ?? true,
    visible_in_feeds: body.visible_in_feeds ?? body.visible_in_fields ?? true,
    display_mode: displayMode(body.display_style),
    attributes: attributes(slug, body.attributes ?? []),
    created_by: 'Public API',
    created_at: now,
    edited_at: now,
  };
  store.activities.set(id, definition);
  store.touch();
  return { custom_activity: definition };
}

function live(store: Store, id: string): ActivityDefinition {
  const definition = store.activities.get(id);
  if (!definition) fail(`No activity definition has field ID ${JSON.stringify(id)}`, 404);
  if (definition.state === 'archived') fail(`Activity ${id} is archived; it can no longer be changed`);
  return definition;
}

export function modifyDefinition(store: Store, body: DefinitionInput & { activity_field_id: string }): ResponseMap['definitions/activity/modify'] {
  const definition = live(store, body.activity_field_id);
  if (body.name !== undefined) {
    assertUniqueName(store, body.name, definition.activity_field_id);
    definition.name = body.name;
  }
  if (body.icon_id !== undefined) definition.icon_id = body.icon_id;
  if (body.track_conversion_value !== undefined) definition.track_conversion_value = body.track_conversion_value;
  if (body.touch !== undefined) definition.touch = body.touch;
  if (body.filterable !== undefined) definition.filterable = body.filterable;
  const visible = body.visible_in_feeds ?? body.visible_in_fields;
  if (visible !== undefined) definition.visible_in_feeds = visible;
  if (body.display_style !== undefined) definition.display_mode = displayMode(body.display_style);
  if (body.attributes !== undefined) definition.attributes = attributes(parseFieldId(definition.activity_field_id)!.name, body.attributes);
  if (body.state !== undefined) definition.state = body.state;
  definition.edited_at = store.nowIso();
  store.touch();
  return { custom_activity: definition };
}

/** Archives the definition (permanent deletion happens in the product, not through the API). */
export function deleteDefinition(store: Store, body: { activity_field_id: string }): ResponseMap['definitions/activity/delete'] {
  const definition = live(store, body.activity_field_id);
  definition.state = 'archived';
  definition.edited_at = store.nowIso();
  store.touch();
  return { archived_activity: definition.activity_field_id };
}
