/** The platform's answer as the proxy's answer: what is passed on, and what never is. */
import { RelayHttpError, type HttpAnswer } from '../errors.js';
import { discard, type TransportAnswer } from '../deliver/transport.js';

/**
 * The platform's answer for the caller: its status, body and Content-Type, plus
 * `Cache-Control: no-store`; `Retry-After` on a 429. Bodies larger than 64 kB, or of unknown
 * length, are streamed through as they arrive, never buffered.
 */
export async function passThrough(answer: TransportAnswer): Promise<HttpAnswer> {
  if (answer.status < 200 || (answer.status >= 300 && answer.status < 400) || answer.status > 599) {
    // 1xx cannot be a final answer and a 3xx would point the caller somewhere we never vetted.
    await discard(answer);
    throw new RelayHttpError(502, 'upstream_bad_response', `the platform answered with status ${answer.status}, which the relay does not pass on`);
  }
  // A plain object and a byte array: the shapes node:http (and @hono/node-server) write in a single call.
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  if (answer.contentType !== undefined) headers['content-type'] = answer.contentType;
  if (answer.status === 429 && answer.retryAfter !== undefined) headers['retry-after'] = answer.retryAfter;
  return { status: answer.status, headers, body: answer.body };
}
