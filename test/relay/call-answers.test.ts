// What a platform call's 2xx answer proves about its entries, when the platform sends the same
// bytes call after call (a full call of taken entries) and when it does not: each answer is judged
// by its own bytes, whatever was answered before.
import { describe, expect, it } from 'vitest';
import type { Upstream, UpstreamAnswer } from '../../src/relay/deliver/caller.js';
import { callOnce } from '../../src/relay/deliver/send.js';
import { judge } from '../../src/relay/deliver/verdict.js';
import type { Leased } from '../../src/relay/state/outbox.js';

const entries = (n: number): Leased[] =>
  Array.from({ length: n }, (_, i) => ({
    seq: i + 1,
    attempts: 0,
    site: 'pk_s',
    id: `id-${i}`,
    kind: 'activity',
    browser: 'b',
    visitor: 'v',
    accepted: 0,
    text: '{}',
  }));
const platform = (bodies: string[]): Upstream => ({
  call: async (): Promise<UpstreamAnswer> => ({
    status: 200,
    contentType: 'application/json',
    retryAfter: undefined,
    body: new TextEncoder().encode(bodies.shift()!),
  }),
  holdMs: () => 0,
  backoff: { until: 0 },
});
const answer = (statuses: string[]) => JSON.stringify({ activities: statuses.map((status) => ({ status, person_status: 'queued' })) });

describe('a 2xx answer of a platform call', () => {
  it('is judged by its own bytes: the same answer again takes the same entries, one of the same length that differs is read anew', async () => {
    // The same length, byte for byte, with the second entry refused ('invalid' is a letter longer than 'queued').
    const taken = answer(['queued', 'queued', 'queued']).replace('{"activities":', '{"activities": ');
    const sameLength = answer(['queued', 'invalid', 'queued']);
    expect(sameLength).toHaveLength(taken.length);
    const upstream = platform([taken, taken, sameLength, taken, 'not json']);
    const verdicts = [];
    for (let i = 0; i < 5; i++)
      verdicts.push(judge({ endpoint: 'activities/create', entries: entries(3) }, await callOnce(upstream, 'activities/create', '{}'), true, 0));
    expect(verdicts.map((verdict) => verdict.delivered.map((entry) => entry.seq))).toEqual([[1, 2, 3], [1, 2, 3], [1, 3], [1, 2, 3], []]);
    expect(verdicts[2]!.dead.map(({ entry, reason }) => [entry.seq, reason])).toEqual([[2, 'invalid: invalid activity']]);
    // A 2xx that is not JSON cannot say what it applied, however often it comes.
    expect(verdicts[4]!.ambiguous).toHaveLength(3);
  });

  it('reads an answer nested deeper than the stack allows without failing the call', async () => {
    const deep = `{"activities":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    const outcome = await callOnce(platform([deep]), 'activities/create', '{}');
    expect(outcome.kind).toBe('ok');
  });
});
