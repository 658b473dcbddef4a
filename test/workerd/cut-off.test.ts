// What an isolate keeps for all its requests is read by each request for itself: in workerd a call
// (or fetch) belongs to the request that made it, and a request whose client goes away takes its
// unanswered calls with it. A promise of that call shared with other requests never settles, and
// they hang. Here the first /collect of an isolate is cut off while it reads the suppression list
// of erasure (state/suppression.ts), and the next visitors must still be answered.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { SUPPRESSION_OBJECT } from '../../src/relay/workers/outbox.js';
import { cutOffFirst } from './cut-off.js';

describe('a request cut off by its client holds no other back', () => {
  it("while it reads the isolate's copy of the suppression list", async () => {
    // The isolate's first request: past its looks at the refusal buckets it reads the list, from
    // the object that keeps it, held busy here.
    const list = env['RELAY_OUTBOX'].get(env['RELAY_OUTBOX'].idFromName(SUPPRESSION_OBJECT));
    expect(await cutOffFirst('pk_queue', list)).toEqual({
      first: 'AbortError',
      second: { status: 200, results: ['accepted'] },
      third: { status: 200, results: ['accepted'] },
    });
  });
});
