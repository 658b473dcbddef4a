/**
 * Reads a /collect body within its limits before any other work: ≤ 512 KB (413), JSON (400),
 * an object with `key` and `batch` (400), ≤ 100 items (413). `text/plain` (fetch without
 * preflight, `sendBeacon`) and `application/json` are both accepted.
 * @module
 */
import { COLLECT_LIMITS } from '../../api/index.js';
import { quoteId } from '../../api/objects.js';
import { RelayHttpError } from '../core/errors.js';
import { readBody } from '../core/request-body.js';

export const MAX_BODY_BYTES = COLLECT_LIMITS.bodyBytes;
export const MAX_ITEMS = COLLECT_LIMITS.items;

export interface CollectBody {
  key: string;
  batch: unknown[];
  /** the identity token of an earlier answer, sent back by the snippet */
  identity: string | undefined;
  /** size of the raw body */
  bytes: number;
  /** `sent_at` as ms since epoch (the browser's clock when it sent), when given and valid */
  sentAt: number | undefined;
  /** the stable id of the browser's queue, when sent */
  queue: string | undefined;
}

const tooLarge = (bytes: number | string) =>
  new RelayHttpError(
    413,
    'body_too_large',
    `The body is ${bytes} bytes; /collect takes at most ${MAX_BODY_BYTES} bytes (512 KB). Send fewer or smaller items per request.`,
  );

/**
 * A /collect request as the handler needs it, whatever the runtime built: the standard
 * `Request` ({@link fromRequest}) or Node's own request (the Node entry's front).
 */
export interface CollectRequest {
  origin: string | undefined;
  /** the `Authorization` header (the server door's relay token) */
  authorization?: string | undefined;
  contentType: string | undefined;
  contentLength: string | undefined;
  /** the body as text and its size; a 413 {@link RelayHttpError} as soon as more than `limit` bytes arrive */
  read(limit: number): Promise<{ text: string; size: number }>;
}

export function fromRequest(request: Request): CollectRequest {
  return {
    origin: request.headers.get('origin') ?? undefined,
    authorization: request.headers.get('authorization') ?? undefined,
    contentType: request.headers.get('content-type') ?? undefined,
    contentLength: request.headers.get('content-length') ?? undefined,
    read: (limit) => readBody(request, limit),
  };
}

/** The body's text within {@link MAX_BODY_BYTES}; the capped reader's refusals in /collect's words. */
async function readText(request: CollectRequest): Promise<{ text: string; size: number }> {
  try {
    return await request.read(MAX_BODY_BYTES);
  } catch (error) {
    if (!(error instanceof RelayHttpError)) throw error;
    if (error.status === 413) throw tooLarge(request.contentLength ?? `over ${MAX_BODY_BYTES}`);
    throw new RelayHttpError(400, 'malformed_body', 'The body is not UTF-8 text; send the batch as JSON.', { cause: error });
  }
}

/**
 * Parses and checks the envelope of a /collect request; throws {@link RelayHttpError} for whole-request failures.
 * `keyed: false` (the server door, whose token names its sender) needs no `key`.
 */
export async function readCollectBody(request: CollectRequest, { keyed = true }: { keyed?: boolean } = {}): Promise<CollectBody> {
  const type = (request.contentType ?? 'text/plain').split(';')[0]!.trim().toLowerCase();
  if (type !== 'text/plain' && type !== 'application/json') {
    throw new RelayHttpError(415, 'unsupported_media_type', `Content-Type ${quoteId(type)} is not accepted; send text/plain or application/json.`);
  }
  const { text, size } = await readText(request);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (cause) {
    // JSON.parse's message quotes the text around the fault: none of it goes into the answer or the logs.
    throw new RelayHttpError(400, 'malformed_body', 'The body is not valid JSON; send the batch as one JSON object.', { cause });
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new RelayHttpError(400, 'invalid_body', `The body must be a JSON object {${keyed ? '"key",' : ''}"batch":[…]}.`);
  }
  const { key, batch, identity, sent_at: sentAt, queue } = body as Record<string, unknown>;
  const details: string[] = [];
  if (keyed && (typeof key !== 'string' || key === '')) details.push('key: the site key is missing (a non-empty string)');
  if (!Array.isArray(batch)) details.push('batch: must be an array of items');
  if (identity !== undefined && identity !== null && typeof identity !== 'string') details.push('identity: must be the string of an earlier answer');
  if (queue !== undefined && queue !== null && (typeof queue !== 'string' || queue === '' || queue.length > COLLECT_LIMITS.queueChars)) {
    details.push(`queue: must be the queue's id, a string of 1 to ${COLLECT_LIMITS.queueChars} characters`);
  }
  if (details.length > 0) throw new RelayHttpError(400, 'invalid_body', `The body is not a /collect batch: ${details.join('; ')}.`, { details });
  if ((batch as unknown[]).length > MAX_ITEMS) {
    throw new RelayHttpError(
      413,
      'too_many_items',
      `The batch has ${(batch as unknown[]).length} items; /collect takes at most ${MAX_ITEMS} per request. Split it.`,
    );
  }
  const sent = typeof sentAt === 'string' ? Date.parse(sentAt) : Number.NaN;
  return {
    key: typeof key === 'string' ? key : '',
    batch: batch as unknown[],
    identity: typeof identity === 'string' ? identity : undefined,
    bytes: size,
    sentAt: Number.isFinite(sent) ? sent : undefined,
    queue: typeof queue === 'string' ? queue : undefined,
  };
}
