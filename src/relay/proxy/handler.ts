/** One proxy call from arrival to answer: route check, token, scope, body, then the platform. */
import { validateChunks, validateRequest, type Chunking, type Endpoint, type EndpointId } from '../../api/index.js';
import { createTokenVerifier, type TokenConfig } from '../core/tokens.js';
import type { AuditEntry } from '../core/observe.js';
import { authenticate, authorize } from '../core/auth.js';
import { parseJson, readBody } from '../core/request-body.js';
import { isRecord } from '../../api/objects.js';
import { chunksOf, Pacer, sendChunks } from './chunk.js';
import { jsonAnswer, RelayHttpError, type HttpAnswer } from '../core/errors.js';
import { createUpstream, type Upstream } from '../deliver/caller.js';
import { discard, type TransportAnswer } from '../deliver/transport.js';
import type { ProxyConfig } from './options.js';

/**
 * A proxy call as the handler needs it, whatever the runtime built: the standard `Request`
 * ({@link fromRequest}) or Node's own request (the Node entry's front).
 */
export interface ProxyRequest {
  method: string;
  /** the path as sent, without the query */
  path: string;
  /** the query without its `?`; '' when none */
  query: string;
  /** a header by its lower-case name */
  header(name: string): string | undefined;
  /** the body as text and its size; a 413 {@link RelayHttpError} as soon as more than `limit` bytes are declared or arrive */
  read(limit: number): Promise<{ text: string; size: number }>;
}

/** Answers one call; `endpoint` is the route it matched (undefined for anything else under `/v1/`). */
export type ProxyHandler = (request: ProxyRequest, endpoint?: Endpoint<EndpointId>) => Promise<HttpAnswer>;

const notFound = (request: ProxyRequest) =>
  new RelayHttpError(
    404,
    'unknown_endpoint',
    `${request.method.slice(0, 10)} ${request.path.slice(0, 200)} is not a platform endpoint; the relay serves exactly the spec's method+path pairs (e.g. POST /v1/person/get)`,
  );

/**
 * Path and query of an absolute request URL as the runtime normalised it (Request.url always is),
 * without a full URL parse on every call.
 */
function splitUrl(url: string): { path: string; query: string } {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  const mark = url.indexOf('?', start);
  if (start === -1) return { path: '/', query: '' };
  return mark === -1 ? { path: url.slice(start), query: '' } : { path: url.slice(start, mark), query: url.slice(mark + 1) };
}

/** A standard `Request` as a {@link ProxyRequest}. */
export function fromRequest(request: Request): ProxyRequest {
  const { path, query } = splitUrl(request.url);
  return {
    method: request.method,
    path,
    query,
    header: (name) => request.headers.get(name) ?? undefined,
    read: (limit) => readBody(request, limit),
  };
}

const invalid = (endpoint: Endpoint<EndpointId>, issues: { path: string; message: string }[]) => {
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more in details)` : '';
  return new RelayHttpError(400, 'invalid_request', `${endpoint.id}: ${issues[0]?.message ?? 'invalid body'}${more}; nothing was sent to the platform`, {
    details: issues,
  });
};

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

const heldError = (ms: number) => {
  const seconds = Math.ceil(ms / 1000);
  return new RelayHttpError(
    429,
    'rate_limited',
    `the platform asked to slow down; the relay holds calls for ${seconds} more second(s): retry after the Retry-After header`,
    {
      retryAfter: seconds,
    },
  );
};

/** Throws the relay's own 429 (with `Retry-After`) while the platform's hold is in force. */
function refuseWhileHeld(upstream: Upstream): void {
  const ms = upstream.holdMs();
  if (ms > 0) throw heldError(ms);
}

export function createHandler(config: ProxyConfig): ProxyHandler {
  const verify = createTokenVerifier(config.tokens);
  // Each call takes its slot of the deployment's budget first (`pacer`): never made to wait for deliveries.
  const upstream = createUpstream(config);
  const pacer = new Pacer(config);

  async function answer(request: ProxyRequest, endpoint: Endpoint<EndpointId> | undefined, seen: { token?: TokenConfig; calls: number }): Promise<HttpAnswer> {
    const { path, query } = request;
    // The router may have decoded or normalised the path; only the exact fixed path counts.
    if (endpoint === undefined || path !== endpoint.path) throw notFound(request);
    const token = authenticate(request.header('authorization'), verify);
    seen.token = token;
    authorize(token, endpoint);
    const chunked = query !== '' && new URLSearchParams(query).get('chunk') === 'true';
    if (chunked && endpoint.chunking === undefined) {
      throw new RelayHttpError(400, 'chunk_unsupported', `${endpoint.id} has no item list to split; drop ?chunk=true`);
    }
    const { text, size } = await request.read(chunked ? config.maxChunkedBytes : config.maxBytes);
    const body = parseJson(text);
    if (chunked && isRecord(body)) {
      const chunkable = endpoint as Endpoint<EndpointId> & { chunking: Chunking };
      const chunks = chunksOf(chunkable.chunking, body, config.maxChunkedItems);
      const issues = validateChunks(endpoint.id, chunks);
      if (issues.length > 0) throw invalid(endpoint, issues);
      const result = await sendChunks({ config, upstream, pacer }, chunkable, chunks);
      seen.calls = result.calls;
      return jsonAnswer(result.answer, 200, { 'x-relay-chunks': String(chunks.length) });
    }
    const checked = validateRequest(endpoint.id, body, size);
    if (!checked.ok) throw invalid(endpoint, checked.issues);
    refuseWhileHeld(upstream);
    seen.calls = 1;
    // Re-serialised, so the platform gets exactly what was validated (no duplicate-key tricks).
    return await passThrough(await upstream.call(endpoint, JSON.stringify(body)));
  }

  return async (request, endpoint) => {
    const started = config.now();
    const seen: { token?: TokenConfig; calls: number } = { calls: 0 };
    let response: HttpAnswer;
    let error: string | undefined;
    try {
      response = await answer(request, endpoint, seen);
    } catch (caught) {
      const failure =
        caught instanceof RelayHttpError
          ? caught
          : new RelayHttpError(500, 'internal_error', 'the relay failed while handling this call; it has been logged', { cause: caught });
      error = failure.code;
      if (!(caught instanceof RelayHttpError)) config.onError(caught);
      response = failure.toAnswer();
    }
    const entry: AuditEntry = {
      ts: new Date(started).toISOString(),
      kind: 'proxy',
      method: endpoint?.method ?? request.method.slice(0, 10),
      path: endpoint?.path ?? '/v1/*',
      status: response.status,
      ms: config.now() - started,
      token: seen.token?.name ?? null,
      endpoint: endpoint?.id ?? null,
      upstream_calls: seen.calls,
    };
    if (error !== undefined) entry.error = error;
    config.logger(entry);
    return response;
  };
}
