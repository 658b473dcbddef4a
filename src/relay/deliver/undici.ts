/**
 * The Node transport: undici's pool, dispatched to with a handler of our own, without the WHATWG
 * `Request`/`Headers`/`AbortSignal` objects Node's global `fetch` builds per call, and without the
 * stream and async iterator undici's `request` makes of every answer's body (an answer is read
 * whole or, past 64 kB, handed on as a stream). undici's own header and body timeouts end a call
 * that outlives `timeoutMs` by destroying its socket, so a hung platform never keeps a pooled
 * connection (undici checks those timeouts on a coarse timer, so a call may run up to about a
 * second past `timeoutMs`). Never imported by the Worker build.
 *
 * @example
 * const relay = createRelay(config, { transport: createUndiciTransport() });
 * @module
 */
import { createRequire } from 'node:module';
import type { Agent as AgentType, Dispatcher } from 'undici';
import { isBodyless, SMALL_BODY, UpstreamTimeout, type Transport, type TransportAnswer } from './transport.js';

export interface UndiciTransportOptions {
  /** connections per upstream origin @default 64 */
  connections?: number;
}

export interface UndiciTransport extends Transport {
  /** Closes the pool's sockets. */
  close(): Promise<void>;
}

/**
 * undici's pool from its own file: undici's index loads all of undici (fetch, WebSocket, caches,
 * mocks, …), 3.3 MB of live heap the relay never uses.
 */
const undiciFile = createRequire(import.meta.url);
const Agent = undiciFile('undici/lib/dispatcher/agent.js') as typeof AgentType;

/** URLs whose origin and path are kept parsed, at most. */
const MAX_TARGETS = 64;

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/** The bytes of `buffer` as a plain Uint8Array, not copied. */
const bytesOf = (buffer: Buffer): Uint8Array<ArrayBuffer> => new Uint8Array(buffer.buffer as ArrayBuffer, buffer.byteOffset, buffer.byteLength);

/** The two headers the relay reads, from undici's raw list (name, value, name, value, …); a repeated one's values joined. */
function headersOf(raw: readonly Buffer[]): { contentType: string | undefined; retryAfter: string | undefined } {
  let contentType: string | undefined;
  let retryAfter: string | undefined;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    // Only names of those lengths are read as text.
    if (name.length !== 12 && name.length !== 11) continue;
    const lower = name.toString('latin1').toLowerCase();
    const value = raw[i + 1]!.toString('latin1');
    if (lower === 'content-type') contentType = contentType === undefined ? value : `${contentType}, ${value}`;
    else if (lower === 'retry-after') retryAfter = retryAfter === undefined ? value : `${retryAfter}, ${value}`;
  }
  return { contentType, retryAfter };
}

/**
 * One call's answer as undici hands it over, as a dispatch handler: up to 64 kB of body is kept
 * and answered whole once it ends (an answer in one chunk, a call's usual one, is that chunk's
 * bytes, not copied: the socket's reads are not reused); past that, a stream that replays what
 * was read and then the rest, read as its reader pulls (undici pauses the socket meanwhile), and
 * cancelling it aborts the call (its socket is closed, not left holding a body nobody reads).
 */
class Answer implements Dispatcher.DispatchHandler {
  private abort: ((reason?: Error) => void) | undefined;
  private resume: (() => void) | undefined;
  private answer: TransportAnswer | undefined;
  private parts: Buffer[] = [];
  private size = 0;
  private stream: ReadableStreamDefaultController<Uint8Array> | undefined;
  private paused = false;
  private done = false;

  constructor(
    private readonly method: string,
    private readonly timeoutMs: number,
    private readonly settle: (answer: TransportAnswer) => void,
    private readonly fail: (error: unknown) => void,
  ) {}

  onConnect(abort: (reason?: Error) => void): void {
    this.abort = abort;
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    // Informational answers (1xx) are not the answer.
    if (status < 200) return true;
    this.resume = resume;
    this.answer = { status, ...headersOf(raw), body: null };
    return true;
  }

  onData(chunk: Buffer): boolean {
    const answer = this.answer!;
    // A bodyless answer's bytes (none, as a rule) are dropped.
    if (isBodyless(answer.status, this.method)) return true;
    if (this.stream !== undefined) {
      if (this.done) return true;
      this.stream.enqueue(bytesOf(chunk));
      this.paused = (this.stream.desiredSize ?? 1) <= 0;
      return !this.paused;
    }
    this.parts.push(chunk);
    this.size += chunk.byteLength;
    if (this.size > SMALL_BODY) this.handOnStreamed(answer);
    return true;
  }

  onComplete(): void {
    if (this.stream !== undefined) {
      if (!this.done) this.stream.close();
      this.done = true;
      return;
    }
    const answer = this.answer!;
    if (!isBodyless(answer.status, this.method)) {
      const { parts } = this;
      answer.body = parts.length === 1 ? bytesOf(parts[0]!) : bytesOf(Buffer.concat(parts, this.size));
    }
    this.done = true;
    this.settle(answer);
  }

  onError(error: Error): void {
    if (this.stream !== undefined) {
      if (!this.done) this.stream.error(error);
      this.done = true;
      return;
    }
    this.done = true;
    const code = (error as { code?: unknown }).code;
    this.fail(typeof code === 'string' && TIMEOUT_CODES.has(code) ? new UpstreamTimeout(`no answer within ${this.timeoutMs} ms`, { cause: error }) : error);
  }

  /** Past 64 kB: the answer goes on now, its body a stream of what was read and the rest. */
  private handOnStreamed(answer: TransportAnswer): void {
    const read = this.parts;
    this.parts = [];
    answer.body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.stream = controller;
        for (const part of read) controller.enqueue(bytesOf(part));
      },
      pull: () => {
        if (!this.paused) return;
        this.paused = false;
        this.resume?.();
      },
      cancel: (reason) => {
        this.done = true;
        this.abort?.(reason instanceof Error ? reason : new Error('the answer was cancelled'));
      },
    });
    this.settle(answer);
  }
}

export function createUndiciTransport(options: UndiciTransportOptions = {}): UndiciTransport {
  const dispatcher = new Agent({ connections: options.connections ?? 64, keepAliveTimeout: 10_000 });
  /** each URL's origin and path, parsed once: the caller's are a few fixed ones (caller.ts) */
  const targets = new Map<string, { origin: string; path: string }>();
  const targetOf = (url: string) => {
    let target = targets.get(url);
    if (target === undefined) {
      const { origin, pathname, search } = new URL(url);
      target = { origin, path: `${pathname}${search}` };
      if (targets.size >= MAX_TARGETS) targets.clear();
      targets.set(url, target);
    }
    return target;
  };
  const transport = ({ method, url, headers, body, timeoutMs }: Parameters<Transport>[0]): Promise<TransportAnswer> =>
    new Promise((resolve, reject) => {
      const { origin, path } = targetOf(url);
      dispatcher.dispatch(
        { origin, path, method: method as 'POST', headers, body: body ?? null, headersTimeout: timeoutMs, bodyTimeout: timeoutMs },
        new Answer(method, timeoutMs, resolve, reject),
      );
    });
  return Object.assign(transport, { close: () => dispatcher.close() });
}
