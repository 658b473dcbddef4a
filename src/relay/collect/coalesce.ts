/**
 * Joins the `activities/create` calls of concurrent /collect requests into one platform call, and
 * hands each request its own part of the answer. Calls made in the same turn of the event loop
 * join; while {@link MAX_CALLS_IN_FLIGHT} joined calls are in flight, later ones wait and gather
 * (a full call never waits).
 *
 * Why: a busy relay answers many small requests at once (one visitor's batch each), and the
 * platform limits calls per second per key (10 or 30), not activities. One call per request would
 * run into that limit at a few dozen visitors; joined, the relay sends fewer, fuller calls, and
 * the busier it is the fuller they get. Nothing waits when the platform keeps up.
 *
 * What each request sees is what its own call would have given it:
 *  - the platform took the call: each request gets the answers of its own entries, in order;
 *  - nothing got through (429 hold, 5xx, timeout, network): each request gets that outcome, so
 *    its items are retried and released exactly as before;
 *  - the platform refused the call as a whole (4xx): per-entry details are split by request when
 *    there is one per entry; otherwise the refusal cannot be pinned on one request, and each
 *    request's entries go again in a call of their own, so one bad request never fails the others.
 *
 * A joined call holds at most 100 entries and 2 MB (the platform's limits); a request's part is
 * never split. Only for a long-running process (the Node entry): in Workers an isolate may not
 * answer one request with I/O started by another.
 * @module
 */
import { ENDPOINTS, LIMITS, utf8Length } from '../../api/index.js';
import { isRecord } from '../../api/objects.js';
import { sendOnce, type Outcome, type SendContext } from '../deliver/send.js';

/** Sends `entries` to activities/create under `envelope`, joined with other requests' calls (see the module). */
export type Coalescer = (ctx: SendContext, envelope: Record<string, unknown>, entries: readonly Record<string, unknown>[]) => Promise<Outcome>;

interface Part {
  ctx: SendContext;
  /** the entries as a JSON array, serialised once */
  text: string;
  count: number;
  resolve: (outcome: Outcome) => void;
  reject: (error: unknown) => void;
}

interface Call {
  /** the envelope as JSON, its closing brace left off */
  head: string;
  parts: Part[];
  count: number;
  bytes: number;
  /** no more entries fit: it goes at once, whatever is in flight (waiting would gather nothing) */
  full?: boolean;
}

const ENDPOINT = ENDPOINTS['activities/create'];
const MAX_ENTRIES = ENDPOINT.chunking!.max;

/** The body of a call: the envelope with the parts' entries in one `activities` array. */
function bodyOf(call: Call): string {
  const entries = call.parts.map((part) => part.text.slice(1, -1)).join(',');
  return `${call.head}${call.head === '{' ? '' : ','}"activities":[${entries}]}`;
}

/** Each part's slice of a per-entry list, or undefined when the list is not one per entry. */
function split<T>(call: Call, list: unknown, make: (slice: unknown[]) => T): T[] | undefined {
  if (!Array.isArray(list) || list.length !== call.count) return undefined;
  let offset = 0;
  return call.parts.map((part) => {
    const slice = list.slice(offset, offset + part.count);
    offset += part.count;
    return make(slice);
  });
}

async function send(call: Call): Promise<void> {
  const [first] = call.parts as [Part, ...Part[]];
  if (call.parts.length === 1) {
    first.resolve(await sendOnce(first.ctx, 'activities/create', bodyOf(call)));
    return;
  }
  // The joined call answers by the earliest deadline of its requests.
  const deadline = Math.min(...call.parts.map((part) => part.ctx.deadline));
  const statuses: number[] = [];
  const outcome = await sendOnce({ ...first.ctx, deadline, statuses }, 'activities/create', bodyOf(call));
  for (const part of call.parts) part.ctx.statuses.push(...statuses);
  let outcomes: Outcome[] | undefined;
  if (outcome.kind === 'ok') {
    const answers = isRecord(outcome.body) ? outcome.body['activities'] : undefined;
    // Answers that do not line up with the entries are read as the one call would have read them: as taken.
    outcomes = split(call, answers, (activities): Outcome => ({ kind: 'ok', body: { activities } })) ?? call.parts.map(() => ({ kind: 'ok', body: {} }));
  } else if (outcome.kind === 'unavailable') {
    outcomes = call.parts.map(() => outcome);
  } else {
    outcomes = split(call, outcome.details, (details): Outcome => ({ ...outcome, details }));
    if (outcomes === undefined) {
      // Refused as a whole with nothing that says whose entries: each request's entries alone.
      outcomes = await Promise.all(call.parts.map((part) => sendOnce(part.ctx, 'activities/create', bodyOf({ ...call, parts: [part] }))));
    }
  }
  for (const [index, part] of call.parts.entries()) part.resolve(outcomes[index]!);
}

/** Joined calls of one envelope in flight at once; more wait and gather entries meanwhile. */
export const MAX_CALLS_IN_FLIGHT = 8;

interface Lane {
  /** calls gathering entries, oldest first */
  waiting: Call[];
  inFlight: number;
  /** a pump is scheduled for the end of this turn */
  scheduled: boolean;
}

const gaveUp: Outcome = { kind: 'unavailable', status: 0, message: 'the platform was busy with earlier calls until the time budget ran out', retryAfter: 1 };

/**
 * A coalescer for one upstream. Calls with the same envelope made in the same turn go as one;
 * while {@link MAX_CALLS_IN_FLIGHT} of them are in flight, later ones wait and gather, so a relay
 * under load sends fewer, fuller calls. A call that is full (100 entries, or the next request's
 * entries would not fit) goes at once: waiting could not make it fuller.
 */
export function createCoalescer(maxInFlight = MAX_CALLS_IN_FLIGHT): Coalescer {
  const lanes = new Map<string, Lane>();

  const pump = (key: string, lane: Lane) => {
    lane.scheduled = false;
    while (lane.waiting.length > 0 && (lane.inFlight < maxInFlight || lane.waiting[0]!.full)) {
      const call = lane.waiting.shift()!;
      // A request that waited past its deadline is answered now (its items retried), not late.
      const onTime: Part[] = [];
      for (const part of call.parts) {
        if (part.ctx.deadline > part.ctx.clock.now()) onTime.push(part);
        else part.resolve(gaveUp);
      }
      call.parts = onTime;
      call.count = onTime.reduce((sum, part) => sum + part.count, 0);
      if (call.parts.length === 0) continue;
      lane.inFlight++;
      send(call)
        .catch((error: unknown) => {
          for (const part of call.parts) part.reject(error);
        })
        .finally(() => {
          lane.inFlight--;
          pump(key, lane);
        });
    }
    if (lane.inFlight === 0 && lane.waiting.length === 0 && lanes.get(key) === lane) lanes.delete(key);
  };

  return (ctx, envelope, entries) => {
    if (entries.length === 0) return sendOnce(ctx, 'activities/create', { ...envelope, activities: [] });
    const text = JSON.stringify(entries);
    const bytes = utf8Length(text);
    const key = JSON.stringify(envelope);
    return new Promise<Outcome>((resolve, reject) => {
      let lane = lanes.get(key);
      if (lane === undefined) {
        lane = { waiting: [], inFlight: 0, scheduled: false };
        lanes.set(key, lane);
      }
      let call = lane.waiting.at(-1);
      if (call === undefined || call.count + entries.length > MAX_ENTRIES || call.bytes + bytes + 1 > LIMITS.payloadBytes) {
        if (call !== undefined) call.full = true;
        const head = key.slice(0, -1);
        call = { head, parts: [], count: 0, bytes: utf8Length(head) + '"activities":[]}'.length + 1 };
        lane.waiting.push(call);
      }
      call.parts.push({ ctx, text, count: entries.length, resolve, reject });
      call.count += entries.length;
      call.bytes += bytes + 1;
      if (call.count >= MAX_ENTRIES) call.full = true;
      if (!lane.scheduled) {
        lane.scheduled = true;
        // After the callbacks of this turn: every request that got this far with this one joins.
        const scheduled = lane;
        setImmediate(() => pump(key, scheduled));
      }
    });
  };
}
