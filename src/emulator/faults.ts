/**
 * Fault mode: endpoints fail on purpose (`{"person/merge": {"status": 503, "rate": 0.2}}`, `*`
 * for all), so relay and client tests can see the upstream fail. A fault strikes before the call
 * is applied (nothing changed: a retry is safe), or with `"applied": true` after it (the state
 * changed and the caller cannot tell: the ambiguous outcome a 504 from a gateway, a dropped
 * connection or a timeout really is). `"drop"` replaces the answer: `close` ends the connection
 * without one, `hang` never answers (the caller's timeout fires). `"naming"` strikes only the calls
 * whose body holds a text (one person's email: a poisoned entry).
 * @module
 */
import { platformError, rateLimitBody } from '../api/index.js';
import type { FaultSpec, Faults } from './options.js';

/** What the server passes beside the request: @hono/node-server's Node objects, when on Node. */
interface NodeBindings {
  incoming?: { socket?: { destroy(): void } };
}

/** The fault that strikes this call of endpoint `id` (its body read only for a fault `naming` a text), or undefined when it goes through. */
export async function pickFault(faults: Faults, id: string, random: () => number, request: Request): Promise<FaultSpec | undefined> {
  const spec = faults[id] ?? faults['*'];
  if (!spec || random() >= (spec.rate ?? 1)) return undefined;
  if (spec.naming !== undefined && !(await request.clone().text()).includes(spec.naming)) return undefined;
  return spec;
}

/** How long a `hang` fault keeps a caller that never gives up waiting. */
const HANG_MAX_MS = 120_000;

/** The failure `spec` produces for endpoint `id`: an error answer, a dropped connection or none at all. */
export async function failure(spec: FaultSpec, id: string, request: Request, env: unknown): Promise<Response> {
  if (spec.delayMs) await new Promise((resolve) => setTimeout(resolve, spec.delayMs));
  if (spec.drop === 'hang') {
    // Held until the caller gives up (its abort reaches the request's signal) or HANG_MAX_MS.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, HANG_MAX_MS);
      request.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  if (spec.drop === 'close') {
    const socket = (env as NodeBindings | undefined)?.incoming?.socket;
    if (socket) {
      socket.destroy();
      return new Response(null, { status: 500 }); // written nowhere: the socket is gone
    }
    // No socket to close (workerd, a bare fetch handler): a body that breaks after the headers.
    const broken = new ReadableStream({
      start(controller) {
        controller.error(new Error(`Injected dropped connection for ${id}`));
      },
    });
    return new Response(broken, { status: 200, headers: { 'Content-Type': 'application/json' } });
  }
  const status = spec.status ?? 504;
  const body = status === 429 ? rateLimitBody(1) : platformError(status, spec.message ?? `Injected fault for ${id}`);
  return new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
}
