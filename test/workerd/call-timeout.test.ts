// A platform call that outlives its timeout inside workerd: fetchTransport aborts it through its
// signal and the caller gets UpstreamTimeout (a call in doubt), whether the body was still being
// sent, the answer was awaited, or its answer's body was being read. Nothing else may surface: an
// unhandled rejection fails the run (the abort's reason, f40078d), except workerd's own report of
// the subrequest it cancelled (workerdAbortReport in abort-report.ts, which says why).
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { fetchTransport, UpstreamTimeout } from '../../src/relay/deliver/transport.js';

/** Accepts a call and never reads it nor answers (upstreams.ts). */
const deaf = env['TEST_DEAF_PLATFORM'] as string;
/** Answers a call's first bytes at once with its headers and the start of its body, then nothing more. */
const half = env['TEST_HALF_PLATFORM'] as string;

const call = (platform: string, body: string, timeoutMs: number) =>
  fetchTransport(fetch)({ method: 'POST', url: `${platform}/v1/activities/create`, headers: { 'content-type': 'application/json' }, body, timeoutMs });

describe('a platform call that times out inside workerd', () => {
  it('ends in UpstreamTimeout while its answer is awaited', async () => {
    await expect(call(deaf, '{"activities":[]}', 50)).rejects.toBeInstanceOf(UpstreamTimeout);
  });

  it('ends in UpstreamTimeout while its body (8 MB, never read) is still being sent', async () => {
    await expect(call(deaf, JSON.stringify({ pad: 'x'.repeat(8 * 1024 * 1024) }), 50)).rejects.toBeInstanceOf(UpstreamTimeout);
  });

  it("ends in UpstreamTimeout while its answer's body is read", async () => {
    await expect(call(half, '{"activities":[]}', 50)).rejects.toBeInstanceOf(UpstreamTimeout);
  });

  it('ends in UpstreamTimeout when the abort meets the answer arriving', async () => {
    // The platform answers at once: timeouts of 0-3 ms abort the call around the moment workerd
    // takes in the answer's headers, where workerd rejects a promise of its own with the abort's
    // reason (seen in about a third of such calls on an idle machine, and at load 16 in a full run).
    for (let i = 0; i < 40; i++) {
      const error = await call(half, '{"activities":[]}', i % 4).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(UpstreamTimeout);
    }
    // An unhandled rejection is reported once the task that dropped it ends: let it surface here.
    await new Promise((resolve) => setTimeout(resolve, 100));
  });
});
