import { describe, expect, it } from 'vitest';
import { ENDPOINTS, failedEntries, joinAnswers, splitBody, validateChunks } from '../../src/api/index.js';
import { createClient, ValidationError } from '../../src/client/index.js';

const merge = ENDPOINTS['person/merge'].chunking!;
const archive = ENDPOINTS['person/archive'].chunking!;
const people = (n: number) => Array.from({ length: n }, (_, i) => ({ fields: { 'str::email': `p${i}@example.com` } }));

describe('splitBody', () => {
  it('leaves a body that fits alone, and cuts 250 items into 100 + 100 + 50 keeping the envelope', () => {
    expect(splitBody({ people: people(100) }, merge)).toHaveLength(1);
    const chunks = splitBody({ people: people(250), merge_by: ['str::email'] }, merge);
    expect(chunks.map((c) => [c.from, c.count])).toEqual([
      [0, 100],
      [100, 100],
      [200, 50],
    ]);
    expect(chunks.every((c) => (c.body['merge_by'] as string[])[0] === 'str::email')).toBe(true);
    expect(chunks.flatMap((c) => c.body['people'] as unknown[])).toEqual(people(250));
  });

  it('cuts by bytes too, so no request passes the 2 MB limit', () => {
    const big = Array.from({ length: 60 }, (_, i) => ({ fields: { 'str::email': `b${i}@x.io`, 'obj:cm:blob': { t: 'x'.repeat(50_000) } } }));
    const chunks = splitBody({ people: big }, merge);
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) expect(JSON.stringify(chunk.body).length).toBeLessThanOrEqual(2 * 1024 * 1024);
    expect(chunks.reduce((n, c) => n + c.count, 0)).toBe(60);
  });
});

describe('joinAnswers and failedEntries', () => {
  it('concatenates results in order and adds up counts', () => {
    expect(joinAnswers(merge, [{ people: [{ status: 'created' }] }, { people: [{ status: 'merged' }] }])).toEqual({
      people: [{ status: 'created' }, { status: 'merged' }],
    });
    expect(
      joinAnswers(archive, [
        { scheduled_contacts: 0, archived_contacts: 100 },
        { scheduled_contacts: 2, archived_contacts: 30 },
      ]),
    ).toEqual({ scheduled_contacts: 2, archived_contacts: 130 });
  });

  it('turns an all-failed merge chunk (400 with one detail per entry) into that chunk’s results, and nothing else', () => {
    const chunk = { from: 100, count: 2, body: {} };
    const details = [
      { status: 'suppressed', error: 'Email is suppressed' },
      { status: 'invalid', error: 'x' },
    ];
    expect(failedEntries(merge, chunk, 400, { code: 400, error: 'all failed', details })).toEqual({ people: details });
    expect(failedEntries(merge, chunk, 400, { code: 400, error: 'bad', details: details.slice(1) })).toBeUndefined();
    expect(failedEntries(merge, chunk, 500, { details })).toBeUndefined();
    expect(failedEntries(archive, chunk, 400, { details })).toBeUndefined();
  });
});

describe('validateChunks', () => {
  it('names a bad item by its place in the caller’s array, not in its chunk', async () => {
    const list = people(250);
    list[203] = { fields: { 'str::email': 5 } } as never;
    const issues = validateChunks('person/merge', splitBody({ people: list }, merge));
    expect(issues).toEqual([{ path: 'people[203].fields', message: 'people[203].fields: str::email: expected a string, got number' }]);
    const error = await createClient({ apiKey: 'k', baseUrl: 'http://127.0.0.1:9' })
      .person.merge({ people: list })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues[0]!.path).toBe('people[203].fields');
  });
});
