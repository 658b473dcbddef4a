/**
 * A Node transport on node:http's and node:https' own clients, with a keep-alive pool per
 * protocol. At `/collect` saturation undici's JavaScript was 7–8% of the memory-store relay's
 * main thread (about 150 µs a call of 100 entries, most of it in V8's baseline tier: a call's code
 * runs a few hundred times a second); node:http's client shares its parser (native llhttp) and
 * much of its code with the server the relay already runs hot.
 *
 * One timer covers the connection, the answer's head and a small body: past `timeoutMs` the
 * request is destroyed, so a hung platform never keeps a pooled socket. A call whose connection
 * was not made by then never left ({@link CONNECT_TIMEOUT}, which `wasNotSent` knows); one that
 * was sent is an {@link UpstreamTimeout}. A body past {@link SMALL_BODY} is handed on as a stream
 * of what was read and the rest, ended with an error when the platform goes quiet for `timeoutMs`.
 * Never imported by the Worker build.
 * @module
 */
import { Agent as HttpAgent, type ClientRequest, type IncomingMessage, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { afterPoll, isBodyless, KEEP_ALIVE_MS, SMALL_BODY, UpstreamTimeout, type Transport, type TransportAnswer } from './transport.js';

export interface NodeHttpTransportOptions {
  /** connections per upstream origin @default 64 */
  connections?: number;
}

export interface NodeHttpTransport extends Transport {
  /** Closes the pools' sockets. */
  close(): Promise<void>;
}

/** The code of a call whose connection was not made within its time: it never left (api/retry.ts). */
export const CONNECT_TIMEOUT = 'RELAY_CONNECT_TIMEOUT';
/** The code of a call never written to its connection: it never left (api/retry.ts). */
export const NOT_WRITTEN = 'RELAY_NOT_WRITTEN';

/** Attempts of a call whose pooled connection the platform closed before the call was written to it. */
const MAX_UNWRITTEN = 3;

/** An error that proves the call never left: nothing of it was written (api/retry.ts sends it again). */
const notWritten = (message: string, cause?: unknown): Error => Object.assign(new Error(message, { cause }), { code: NOT_WRITTEN });
/** URLs kept parsed, at most: the caller's are a few fixed ones (caller.ts). */
const MAX_TARGETS = 64;

interface Target {
  secure: boolean;
  hostname: string;
  port: string;
  path: string;
}

const headerOf = (answer: IncomingMessage, name: string): string | undefined => {
  const value = answer.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

/** The parts read so far, then the rest of `answer`, as a web stream; quiet for `timeoutMs`, it ends with an error. */
function streamOf(parts: Buffer[], answer: IncomingMessage, timeoutMs: number): ReadableStream<Uint8Array> {
  // Nothing is handed on once the stream ended, failed or was cancelled (an enqueue then would throw).
  let open = true;
  let chunks = 0;
  answer.setTimeout(timeoutMs, () => {
    // As the call's own timer: after a stalled event loop this runs before what came meanwhile is read.
    const heard = chunks;
    afterPoll(() => {
      if (open && chunks === heard) answer.destroy(new UpstreamTimeout(`the answer went quiet for ${timeoutMs} ms`));
    });
  });
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const part of parts) controller.enqueue(new Uint8Array(part));
      answer.on('data', (chunk: Buffer) => {
        chunks++;
        if (!open) return;
        controller.enqueue(new Uint8Array(chunk));
        if ((controller.desiredSize ?? 1) <= 0) answer.pause();
      });
      answer.once('end', () => {
        if (!open) return;
        open = false;
        if (answer.complete) controller.close();
        else controller.error(new Error('the connection closed before the answer ended'));
      });
      answer.on('error', (error) => {
        if (!open) return;
        open = false;
        controller.error(error);
      });
      answer.resume();
    },
    pull() {
      answer.resume();
    },
    cancel() {
      open = false;
      answer.destroy();
    },
  });
}

export function createNodeHttpTransport(options: NodeHttpTransportOptions = {}): NodeHttpTransport {
  const pool = { maxSockets: options.connections ?? 64, keepAlive: true, timeout: KEEP_ALIVE_MS };
  const http = new HttpAgent(pool);
  const https = new HttpsAgent(pool);
  const targets = new Map<string, Target>();
  const targetOf = (url: string): Target => {
    let target = targets.get(url);
    if (target === undefined) {
      const parsed = new URL(url);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`the platform's URL must be http or https, not ${parsed.protocol}`);
      target = {
        secure: parsed.protocol === 'https:',
        hostname: parsed.hostname.replace(/^\[|\]$/g, ''),
        port: parsed.port,
        path: `${parsed.pathname}${parsed.search}`,
      };
      if (targets.size >= MAX_TARGETS) targets.clear();
      targets.set(url, target);
    }
    return target;
  };

  const transport: Transport = ({ method, url, headers, body, timeoutMs }) =>
    new Promise<TransportAnswer>((resolve, reject) => {
      const target = targetOf(url);
      let connected = false;
      /** whether this attempt's request was handed to its socket: until then, nothing of it can have left */
      let written = false;
      let finished = false;
      let request: ClientRequest | undefined;
      const finish = (error: Error | undefined, answer?: TransportAnswer) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        if (error === undefined) resolve(answer!);
        else {
          request?.destroy();
          reject(error);
        }
      };
      const timedOut = () => {
        if (finished) return;
        const error = !written
          ? notWritten(`the call was not written within ${timeoutMs} ms`)
          : connected
            ? new UpstreamTimeout(`no answer within ${timeoutMs} ms`)
            : Object.assign(new Error(`no connection to the platform within ${timeoutMs} ms`), { code: CONNECT_TIMEOUT });
        request?.destroy(error);
        finish(error);
      };
      // Written on a connection, the call's answer may be in its socket already: after the event loop
      // stalled past the timeout (a long collection, a burst of work), Node runs the expired timer
      // before it polls the socket. The verdict waits for that poll, so an answer that came is read,
      // not taken for none and its entries left in doubt. Unwritten or unconnected, nothing can have
      // come: that verdict is given at once, before a write waiting for the same poll could go out.
      const timer = setTimeout(() => (written && connected ? afterPoll(timedOut) : timedOut()), timeoutMs);
      const onAnswer = (answer: IncomingMessage) => {
        const result: TransportAnswer = {
          status: answer.statusCode ?? 0,
          contentType: headerOf(answer, 'content-type'),
          retryAfter: headerOf(answer, 'retry-after'),
          body: null,
        };
        answer.on('error', (error) => finish(error));
        if (isBodyless(result.status, method)) {
          answer.once('end', () => finish(undefined, result));
          answer.resume();
          return;
        }
        const parts: Buffer[] = [];
        let size = 0;
        const onData = (chunk: Buffer) => {
          parts.push(chunk);
          size += chunk.byteLength;
          if (size <= SMALL_BODY) return;
          // Past a small body: the rest is the reader's, within its own time (send.ts, the proxy).
          answer.off('data', onData);
          answer.off('end', onEnd);
          answer.pause();
          result.body = streamOf(parts, answer, timeoutMs);
          finish(undefined, result);
        };
        const onEnd = () => {
          if (!answer.complete) return finish(new Error('the connection closed before the answer ended'));
          // An answer that came in one chunk (a call's usual one) is that chunk's bytes, not copied.
          const whole = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
          result.body = new Uint8Array(whole.buffer as ArrayBuffer, whole.byteOffset, whole.byteLength);
          finish(undefined, result);
        };
        answer.on('data', onData);
        answer.once('end', onEnd);
      };
      // A body goes with its length, whatever the method (node:http frames a DELETE's or GET's body only so).
      const sized = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
      const call = { hostname: target.hostname, port: target.port, path: target.path, method, headers: sized, agent: target.secure ? https : http };
      const attempt = (tries: number) => {
        connected = false;
        written = false;
        let current: ClientRequest;
        try {
          current = target.secure ? httpsRequest(call, onAnswer) : httpRequest(call, onAnswer);
        } catch (error) {
          return finish(error as Error);
        }
        request = current;
        const write = () => {
          if (finished || current.destroyed) return;
          written = true;
          current.end(body);
        };
        current.once('socket', (socket: Socket) => {
          // A pooled socket is connected already; a new one once it connects (TLS: once its handshake is done).
          if (!socket.connecting) connected = true;
          else socket.once(target.secure ? 'secureConnect' : 'connect', () => (connected = true));
          // A kept-alive socket may have been closed by the platform while it sat in the pool, its
          // close not yet read (the event loop was busy, or the close came just now): the call is
          // written only after the event loop has polled the socket once more. Node 20's agent
          // hands such a socket out as it is; a close read meanwhile fails this request unwritten.
          if (current.reusedSocket) afterPoll(write);
          else write();
        });
        current.on('error', (error) => {
          if (current !== request || finished) return;
          if (written) return finish(error);
          // Nothing of the call was handed to the socket: proven unsent, so it goes again on another connection.
          if (tries < MAX_UNWRITTEN) return attempt(tries + 1);
          finish(notWritten('the platform closed every kept-alive connection the call was given', error));
        });
      };
      attempt(1);
    });
  return Object.assign(transport, {
    close: async () => {
      http.destroy();
      https.destroy();
    },
  });
}
