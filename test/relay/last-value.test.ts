// The values a process or an isolate keeps for all its requests (core/last-value.ts): a request
// never awaits another's load unless the caller shares loads (Node); the last value stands in for
// a load under way only as long as it is told to; the newest load's value is kept.
import { describe, expect, it } from 'vitest';
import { createLastValues } from '../../src/relay/core/last-value.js';

/** A load the test settles by hand, counting how many were made. */
function loads<T>() {
  const pending: { resolve: (value: T) => void; reject: (error: Error) => void }[] = [];
  const load = () => new Promise<T>((resolve, reject) => pending.push({ resolve, reject }));
  return { load, pending };
}

describe('last values', () => {
  it('loads per request while none is kept, then answers the kept value while fresh', async () => {
    const values = createLastValues<string>({ freshMs: 1_000 });
    const { load, pending } = loads<string>();
    const first = values.get('k', 0, load);
    const second = values.get('k', 10, load);
    expect(pending).toHaveLength(2);
    pending[1]!.resolve('newer');
    pending[0]!.resolve('older');
    expect((await first).value).toBe('older');
    expect((await second).value).toBe('newer');
    // The newest load (asked at 10) is kept, whichever answered last.
    expect(await values.get('k', 500, load)).toEqual({ value: 'newer', at: 10 });
    expect(pending).toHaveLength(2);
  });

  it('takes the last value while another load is under way, within underWayMs and standInMs; a failed load keeps nothing', async () => {
    const values = createLastValues<number>({ freshMs: 100, underWayMs: 1_000, standInMs: 1_100 });
    const { load, pending } = loads<number>();
    const kept = values.get('k', 0, load);
    pending[0]!.resolve(1);
    await kept;
    const cutOff = values.get('k', 200, load).catch((error: Error) => error.message);
    expect(pending).toHaveLength(2);
    // Under way: the last value stands in, no load of its own.
    expect(await values.get('k', 300, load)).toEqual({ value: 1, at: 0 });
    // The load under way too long ago no longer stands for the others.
    const late = values.get('k', 1_250, load);
    expect(pending).toHaveLength(3);
    pending[1]!.reject(new Error('cut off'));
    expect(await cutOff).toBe('cut off');
    pending[2]!.resolve(3);
    expect(await late).toEqual({ value: 3, at: 1_250 });
  });

  it('with share (Node), lets the requests that come while a load is under way wait for it', async () => {
    const values = createLastValues<number>({ freshMs: 100, share: true });
    const { load, pending } = loads<number>();
    const all = [values.get('k', 0, load), values.get('k', 5, load), values.get('k', 50, load)];
    expect(pending).toHaveLength(1);
    pending[0]!.resolve(7);
    expect((await Promise.all(all)).map((kept) => kept.value)).toEqual([7, 7, 7]);
    // A load begun longer ago than freshMs is not waited for.
    const next = values.get('k', 200, load);
    void values.get('k', 400, load);
    expect(pending).toHaveLength(3);
    pending[1]!.resolve(8);
    pending[2]!.resolve(9);
    expect((await next).value).toBe(8);
  });
});
