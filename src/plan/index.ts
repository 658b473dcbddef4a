/**
 * The tracking plan as code: schema and checks, the relay's rules, diff/push and type generation.
 * @module
 */
export * from './schema.js';
export { activityRules, attributesProblem, type ActivityRules, type AttributeRule } from './rules.js';
export { definitionBody, emptyLock, pushPlan, seedPlan, summaryLine, type Lock, type PushStep, type PushSummary } from './push.js';
export { generateTypes, type TypesOptions } from './typegen.js';
