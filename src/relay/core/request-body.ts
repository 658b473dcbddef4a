/** Reads a request body up to a byte limit, refusing early instead of buffering an oversize body. */
import { RelayHttpError } from './errors.js';

/** The 413 of a body over `limit` bytes (`size` when known). */
export const tooLarge = (limit: number, size?: number) =>
  new RelayHttpError(
    413,
    'payload_too_large',
    `request body${size === undefined ? '' : ` of ${size} bytes`} is over the ${limit}-byte limit; send fewer items per request`,
  );

/** The body as text and its size, or a 413 {@link RelayHttpError} as soon as more than `limit` bytes arrive. */
export async function readBody(request: Request, limit: number): Promise<{ text: string; size: number }> {
  const length = request.headers.get('content-length');
  const declared = length === null ? NaN : Number(length);
  if (declared > limit) throw tooLarge(limit, declared);
  // With a declared length the HTTP layer delivers at most that many bytes, so reading it whole
  // is bounded (and on Node it skips building a web stream); otherwise count as it streams in.
  if (Number.isInteger(declared)) return decode(new Uint8Array(await request.arrayBuffer()));
  if (request.body === null) return { text: '', size: 0 };
  const reader = request.body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge(limit);
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return decode(bytes);
}

// Stateless when not streaming, so one decoder serves every call.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** UTF-8 text of `bytes` and their size; a 400 {@link RelayHttpError} when they are not UTF-8. */
export function decode(bytes: Uint8Array): { text: string; size: number } {
  try {
    return { text: utf8.decode(bytes), size: bytes.byteLength };
  } catch (cause) {
    throw new RelayHttpError(400, 'malformed_json', 'request body is not UTF-8 text; send a JSON object', { cause });
  }
}

/** Parses the body as JSON; an empty body is `{}` (the list endpoints take no parameters). */
export function parseJson(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new RelayHttpError(400, 'malformed_json', `request body is not valid JSON (${(cause as Error).message}); send a JSON object`, { cause });
  }
}
