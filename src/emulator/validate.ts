/**
 * Request validation at the edge, through src/api (one source of truth). Failures answer 400
 * with every issue named in `details`.
 * @module
 */
import type * as v from 'valibot';
import { ENDPOINTS, validateBody, validateRequest, type EndpointId, type ValidationIssue } from '../api/index.js';
import { accountsMergeEnvelope } from '../api/schemas/accounts.js';
import { activitiesCreateEnvelope } from '../api/schemas/definitions.js';
import { personMergeEnvelope } from '../api/schemas/people.js';
import { fail } from './errors.js';

/** A body as the endpoint's schema leaves it once valid. */
export type Checked<Id extends EndpointId> = v.InferOutput<(typeof ENDPOINTS)[Id]['schema']>;

const refuse = (issues: ValidationIssue[]): never =>
  fail(
    issues.map((issue) => issue.message).join('; '),
    400,
    issues.map((issue) => ({ status: 'invalid', error: issue.message, path: issue.path })),
  );

/** The validated body of endpoint `id`, or a thrown 400 naming each problem. */
export function checkBody<Id extends EndpointId>(id: Id, body: unknown, bytes?: number): Checked<Id> {
  const result = validateRequest(id, body, bytes);
  return result.ok ? result.value : refuse(result.issues);
}

/**
 * For merges and events the platform judges each item's `fields` on its own: a bad value marks
 * that item `invalid` in a 200 answer. So the request is checked with item fields shape-checked
 * only, and the handler checks each item's values.
 */
const ENVELOPES = {
  'person/merge': personMergeEnvelope,
  'accounts/merge': accountsMergeEnvelope,
  'activities/create': activitiesCreateEnvelope,
} as const;

export type PerItemEndpoint = keyof typeof ENVELOPES;

/** The body of a merge or events call, valid but for its items' field values; or a thrown 400. */
export function checkEnvelope<Id extends PerItemEndpoint>(id: Id, body: unknown, bytes?: number): v.InferOutput<(typeof ENVELOPES)[Id]> {
  const result = validateBody(ENVELOPES[id], body, bytes, ENDPOINTS[id].maxBytes);
  return result.ok ? (result.value as v.InferOutput<(typeof ENVELOPES)[Id]>) : refuse(result.issues);
}
