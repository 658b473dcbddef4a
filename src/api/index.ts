/**
 * The platform API as data and types: field IDs, the endpoint table, limits, validators
 * and error shapes. Shared by the client, the relay and the emulator; imports nothing of ours.
 * @module
 */
export * from './fields.js';
export * from './values.js';
export * from './limits.js';
export * from './regions.js';
export * from './errors.js';
export * from './endpoints.js';
export * from './chunking.js';
export * from './collect.js';
export * from './objects.js';
export * from './retry.js';
export * from './validate.js';
export * from './types.js';
export { PERSON_FILTER_OPERATORS, ORGANIZATION_FILTER_OPERATORS, CONTACTS_LINK_FILTER_OPERATORS, GROUP_OPERATORS, filterProblem } from './schemas/filter.js';
export type { Filter, FilterCondition, PersonFilterOperator } from './schemas/filter.js';
export { CUSTOM_FIELD_TYPES, ATTRIBUTE_TYPES, ICON_IDS, FIELD_TYPE_OF } from './schemas/definitions.js';
export type { CustomFieldType, AttributeType } from './schemas/definitions.js';
export { AUDIENCE_FILTERS } from './schemas/people.js';
