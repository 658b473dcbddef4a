/**
 * Fault mode: endpoints answer an error on purpose (`{"person/merge": {"status": 503, "rate": 0.2}}`,
 * `*` for all), so relay and client tests can see the upstream fail.
 * @module
 */
import { platformError, rateLimitBody } from '../api/index.js';
import type { Faults } from './options.js';

/** The error response a fault produces for endpoint `id`, or undefined when this call goes through. */
export async function faultFor(faults: Faults, id: string, random: () => number): Promise<Response | undefined> {
  const spec = faults[id] ?? faults['*'];
  if (!spec || random() >= (spec.rate ?? 1)) return undefined;
  if (spec.delayMs) await new Promise((resolve) => setTimeout(resolve, spec.delayMs));
  const body = spec.status === 429 ? rateLimitBody(1) : platformError(spec.status, spec.message ?? `Injected fault for ${id}`);
  return new Response(JSON.stringify(body), { status: spec.status, headers: { 'Content-Type': 'application/json' } });
}
