/**
 * Reads a /collect body within its limits before any other work: ≤ 512 KB (413), JSON (400),
 * an object with `key` and `batch` (400), ≤ 100 items (413). `text/plain` (fetch without
 * preflight, `sendBeacon`) and `application/json` are both accepted.
 * @module
 */
import { RelayHttpError } from '../errors.js';

export const MAX_BODY_BYTES = 512 * 1024;
export const MAX_ITEMS = 100;

export interface CollectBody {
  key: string;
  batch: unknown[];
  /** the identity token of an earlier answer, sent back by the snippet */
  identity: string | undefined;
  /** size of the raw body */
  bytes: number;
}

const tooLarge = (bytes: number | string) =>
  new RelayHttpError(413, 'body_too_large', `The body is ${bytes} bytes; /collect takes at most ${MAX_BODY_BYTES} bytes (512 KB). Send fewer or smaller items per request.`);

/** Reads at most `max` bytes of `body`; throws 413 beyond. */
async function readCapped(request: Request, max: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array();
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw tooLarge(`over ${max}`);
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

/** Parses and checks the envelope of a /collect request; throws {@link RelayHttpError} for whole-request failures. */
export async function readCollectBody(request: Request): Promise<CollectBody> {
  const type = (request.headers.get('content-type') ?? 'text/plain').split(';')[0]!.trim().toLowerCase();
  if (type !== 'text/plain' && type !== 'application/json') {
    throw new RelayHttpError(415, 'unsupported_media_type', `Content-Type ${JSON.stringify(type)} is not accepted; send text/plain or application/json.`);
  }
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (declared > MAX_BODY_BYTES) throw tooLarge(declared);
  // With a declared length within the limit the runtime reads the body in one go; otherwise it is read capped.
  const bytes = Number.isFinite(declared) && request.body ? new Uint8Array(await request.arrayBuffer()) : await readCapped(request, MAX_BODY_BYTES);
  if (bytes.byteLength > MAX_BODY_BYTES) throw tooLarge(bytes.byteLength);
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch (cause) {
    throw new RelayHttpError(400, 'malformed_body', `The body is not valid JSON (${(cause as Error).message}).`, { cause });
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new RelayHttpError(400, 'invalid_body', 'The body must be a JSON object {"key","batch":[…]}.');
  }
  const { key, batch, identity } = body as Record<string, unknown>;
  const details: string[] = [];
  if (typeof key !== 'string' || key === '') details.push('key: the site key is missing (a non-empty string)');
  if (!Array.isArray(batch)) details.push('batch: must be an array of items');
  if (identity !== undefined && identity !== null && typeof identity !== 'string') details.push('identity: must be the string of an earlier answer');
  if (details.length > 0) throw new RelayHttpError(400, 'invalid_body', `The body is not a /collect batch: ${details.join('; ')}.`, { details });
  if ((batch as unknown[]).length > MAX_ITEMS) {
    throw new RelayHttpError(413, 'too_many_items', `The batch has ${(batch as unknown[]).length} items; /collect takes at most ${MAX_ITEMS} per request. Split it.`);
  }
  return { key: key as string, batch: batch as unknown[], identity: typeof identity === 'string' ? identity : undefined, bytes: bytes.byteLength };
}
