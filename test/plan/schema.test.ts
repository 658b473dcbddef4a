import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ATTRIBUTE_TYPES, CUSTOM_FIELD_TYPES, ICON_IDS } from '../../src/api/index.js';
import { checkPlan, parsePlan, PlanError, type Plan } from '../../src/plan/index.js';

const root = join(import.meta.dirname, '..', '..');
const demoPlan = () => JSON.parse(readFileSync(join(root, 'demo', 'cdp-edge.plan.json'), 'utf8')) as Plan;

/** The problems of a plan, as "path: message" lines. */
function problems(raw: unknown): string[] {
  const result = checkPlan(raw);
  return result.ok ? [] : result.problems.map((p) => `${p.path}: ${p.message}`);
}

const signup = (attributes: unknown[]) => ({ id: 'act:cm:signed-up', name: 'signed-up', attributes });

describe('tracking plan checks', () => {
  it('accepts the demo plan', () => {
    expect(problems(demoPlan())).toEqual([]);
  });

  it('names the path of an unknown attribute type and lists the allowed ones', () => {
    const found = problems({ activities: [signup([{ name: 'plan', type: 'txt' }])] });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/^activities\[0\]\.attributes\[0\]\.type: unknown type "txt"; one of "email", "text"/);
  });

  it('refuses an activity ID that is not act:cm:… or is not the one the platform derives from the name', () => {
    expect(problems({ activities: [{ id: 'signed-up', name: 'signed-up' }] })).toEqual(['activities[0].id: "signed-up" is not an activity ID (act:cm:<name>)']);
    expect(problems({ activities: [{ id: 'act:cm:signup', name: 'Signed up' }] })).toEqual([
      'activities[0].id: the platform names an activity called "Signed up" act:cm:signed-up, not act:cm:signup',
    ]);
  });

  it('refuses more than 100 person custom fields', () => {
    const fields = Array.from({ length: 101 }, (_, i) => ({ name: `field-${i}`, type: 'text' }));
    expect(problems({ activities: [], person_fields: fields })).toEqual(['person_fields: 101 custom fields; an instance holds at most 100']);
  });

  it('refuses an attribute name reused with another type, naming both places', () => {
    const found = problems({
      activities: [signup([{ name: 'plan', type: 'text' }]), { id: 'act:cm:upgraded', name: 'upgraded', attributes: [{ name: 'plan', type: 'integer' }] }],
    });
    expect(found).toEqual([
      'activities[1].attributes[0].type: attribute "plan" is integer here but text at activities[0].attributes[0].type; one name, one type',
    ]);
  });

  it('refuses unknown icons, select fields without values, unknown keys and sites that name what the plan lacks', () => {
    const found = problems({
      activities: [{ id: 'act:cm:signed-up', name: 'signed-up', icon: 'smile', colour: 'red', attributes: [{ name: 'plan', type: 'single_select' }] }],
      person_fields: [{ name: 'tier', type: 'aggregate' }],
      sites: [{ key: 'pk_x', activities: ['act:cm:other'], fields: ['str::email', 'str:cm:nope', 'u4s::t'] }],
    });
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^activities\[0\]\.icon: unknown icon "smile"/),
        'activities[0].colour: unknown key "colour"',
        'activities[0].attributes[0].values: is required for single_select',
        expect.stringMatching(/^person_fields\[0\]\.type: unknown type "aggregate"/),
        'sites[0].activities[0]: "act:cm:other" is not an activity of this plan',
        "sites[0].fields[1]: str:cm:nope is neither a built-in person field nor one of the plan's person_fields",
        'sites[0].fields[2]: u4s::t is computed by the platform; it cannot be sent',
      ]),
    );
    expect(found).toHaveLength(7);
  });

  it('parsePlan throws a PlanError for text that is not JSON, and for a plan that is not an object', () => {
    expect(() => parsePlan('{"activities": [', 'shop.plan.json')).toThrow(PlanError);
    expect(() => parsePlan('{"activities": [', 'shop.plan.json')).toThrow(/shop\.plan\.json is not a valid tracking plan:\n {2}\$: not valid JSON/);
    expect(problems([])).toEqual(['$: a plan is a JSON object {"activities": […], "person_fields": […], "sites": […]}']);
  });

  it('ships a JSON Schema whose lists are the spec lists of src/api', () => {
    const schema = JSON.parse(readFileSync(join(root, 'schema', 'plan.schema.json'), 'utf8'));
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.files).toContain('schema');
    expect(pkg.exports['./plan.schema.json']).toBe('./schema/plan.schema.json');
    expect(schema.definitions.activity.properties.icon.enum).toEqual([...ICON_IDS]);
    expect(schema.definitions.attribute.properties.type.enum).toEqual([...ATTRIBUTE_TYPES]);
    expect(schema.definitions.personField.properties.type.enum).toEqual([...CUSTOM_FIELD_TYPES]);
    expect(schema.properties.person_fields.maxItems).toBe(100);
  });
});
