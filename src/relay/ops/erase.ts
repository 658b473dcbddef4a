/**
 * Erasure at the relay (`POST /admin/erase`, `cdp-edge erase`): one person, named by an email or
 * an external id, in four steps, each reported.
 * 1. Suppress: the person's hash goes into the suppression list until the erasure's end, so
 *    `/collect` answers items naming them `rejected` (`suppressed`) on every relay; the erasure
 *    then waits for every relay's copy of the list to be reloaded (state/suppression.ts).
 * 2. Drop their waiting entries and dead letters in the outbox (every store, every object).
 * 3. Delete them on the platform: `person/get` finds their records, `person/archive` then
 *    `person/delete` remove them (the platform deletes archived records only). Each call takes a
 *    `proxy` place in the key's pace, so an erasure never draws a 429. Skipped while entries of
 *    theirs were in flight (a call may be carrying them, and would bring the person back): the
 *    answer says so, and the operator repeats the erasure once the lease is over.
 * 4. An audit line with counts and the token's name, and a hash prefix, never the identifier.
 * @module
 */
import * as v from 'valibot';
import { ENDPOINTS, type EndpointId } from '../../api/index.js';
import { parseJsonOrUndefined } from '../../api/objects.js';
import type { Upstream } from '../deliver/caller.js';
import { readText } from '../deliver/transport.js';
import { RelayHttpError } from '../core/errors.js';
import { type EraseBy, type Erased, type Person, personHash, personOf, SUPPRESS_DAYS } from '../state/erase.js';

const DAY_MS = 24 * 3600_000;
/** The longest suppression one erasure asks for: ten years. */
const MAX_DAYS = 3650;
/** Records one `person/get` page answers, and one archive or delete call takes (the platform's batch). */
const PAGE = 100;

const identifier = v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(512));
const common = {
  site: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(256))),
  days: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_DAYS))),
};
const Request = v.union([v.strictObject({ email: identifier, ...common }), v.strictObject({ external_id: identifier, ...common })]);

export interface EraseRequest {
  by: EraseBy;
  value: string;
  site: string | undefined;
  days: number;
}

/** The erase request's body, checked; 400 with what to send otherwise. Never quotes what was sent. */
export function parseEraseRequest(body: unknown): EraseRequest {
  const parsed = v.safeParse(Request, body);
  if (!parsed.success)
    throw new RelayHttpError(
      400,
      'invalid_request',
      `send {"email": "…"} or {"external_id": "…"} (one of them, 1 to 512 characters), with "site" (a site's key) and "days" (1 to ${MAX_DAYS}, default ${SUPPRESS_DAYS}) optional`,
    );
  const { site, days } = parsed.output;
  const [by, value] = 'email' in parsed.output ? (['email', parsed.output.email] as const) : (['external_id', parsed.output.external_id] as const);
  return { by, value, site, days: days ?? SUPPRESS_DAYS };
}

/** What the platform did: its records of the person, archived and deleted; or why it was not asked, or what it answered. */
export type PlatformErasure =
  | { status: 'deleted'; found: number; archived: number; deleted: number }
  | { status: 'skipped'; reason: string }
  | { status: 'failed'; step: EndpointId; http_status?: number; error: string };

/** The answer of `POST /admin/erase`. */
export interface EraseReport {
  /** the first 12 hex digits of the person's hash: names the erasure in the audit log, not the person */
  person: string;
  site: string | null;
  suppressed_until: string;
  dropped: { waiting: number; dead_letters: number };
  /** entries a deliverer held when the outbox was swept: sent, or sent again, by it */
  in_flight: number;
  platform: PlatformErasure;
  /** every step done: nothing left to repeat */
  complete: boolean;
}

/** One platform call: its JSON answer, or the failure as the report says it. */
async function platformCall(upstream: Upstream, id: EndpointId, body: unknown): Promise<Record<string, unknown> | PlatformErasure> {
  try {
    const answer = await upstream.call(ENDPOINTS[id], JSON.stringify(body));
    const text = await readText(answer);
    if (answer.status >= 200 && answer.status < 300) return (parseJsonOrUndefined(text) ?? {}) as Record<string, unknown>;
    return { status: 'failed', step: id, http_status: answer.status, error: `the platform answered ${answer.status}` };
  } catch (error) {
    return { status: 'failed', step: id, error: error instanceof RelayHttpError ? error.code : 'the call failed' };
  }
}

const failed = (answer: Record<string, unknown> | PlatformErasure): answer is PlatformErasure => (answer as PlatformErasure).status === 'failed';
const count = (answer: Record<string, unknown>, key: string) => (typeof answer[key] === 'number' ? (answer[key] as number) : 0);

/** Finds the person's records on the platform, archives them, then deletes them. */
export async function deleteOnPlatform(upstream: Upstream, person: Person): Promise<PlatformErasure> {
  const ids: string[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const found = await platformCall(upstream, 'person/get', {
      filter: { '$str::is': { field_id: person.field, value: person.key } },
      fields: [person.field],
      limit: PAGE,
      offset,
    });
    if (failed(found)) return found;
    const contacts = Array.isArray(found['contacts']) ? (found['contacts'] as { id?: unknown }[]) : [];
    for (const contact of contacts) if (typeof contact.id === 'string') ids.push(contact.id);
    if (found['has_more'] !== true || contacts.length === 0) break;
  }
  let archived = 0;
  let deleted = 0;
  for (let i = 0; i < ids.length; i += PAGE) {
    const inclusion_ids = ids.slice(i, i + PAGE);
    const archive = await platformCall(upstream, 'person/archive', { inclusion_ids });
    if (failed(archive)) return archive;
    archived += count(archive, 'archived_contacts') + count(archive, 'scheduled_contacts');
    const removed = await platformCall(upstream, 'person/delete', { inclusion_ids });
    if (failed(removed)) return removed;
    deleted += count(removed, 'deleted_contacts') + count(removed, 'scheduled_contacts');
  }
  return { status: 'deleted', found: ids.length, archived, deleted };
}

/** The person the request names, their hash and the suppression's end. */
export function erasureOf(request: EraseRequest, now: number): { person: Person; hash: string; until: number } {
  const person = personOf(request.by, request.value);
  return { person, hash: personHash(person), until: now + request.days * DAY_MS };
}

/** The report of the steps' outcomes. */
export function reportOf(request: EraseRequest, hash: string, until: number, erased: Erased, platform: PlatformErasure): EraseReport {
  return {
    person: hash.slice(0, 12),
    site: request.site ?? null,
    suppressed_until: new Date(until).toISOString(),
    dropped: { waiting: erased.waiting, dead_letters: erased.dead },
    in_flight: erased.inFlight,
    platform,
    complete: platform.status === 'deleted',
  };
}

/** Why the platform was not asked while entries were in flight. */
export const IN_FLIGHT =
  'entries of this person were in flight (a deliverer held them for a call); repeat the erasure once its lease is over (a minute at most): it then deletes the person on the platform';
