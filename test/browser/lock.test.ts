import { describe, expect, it, vi } from 'vitest';
import { ann, queued, tracker } from './support.js';

describe('the flush lock, held by another tab', () => {
  it('a flush that finds it taken sends nothing and tries again a flush interval later, on its own', async () => {
    let taken = true;
    const locks = {
      request: async (_name: string, _options: unknown, fn: (lock: object | null) => unknown) => {
        return fn(taken ? null : {});
      },
    } as unknown as LockManager;
    const { t, relay } = await tracker({ locks, flushInterval: 50 });
    await t.identify(ann);
    await t.flush();
    expect(relay.sent).toEqual([]);
    expect(await queued()).toHaveLength(1);
    // The other tab lets go: no call of this page's, yet the item goes.
    taken = false;
    await vi.waitFor(() => expect(relay.items().map((i) => i.type)).toEqual(['identify']), { timeout: 5_000 });
    await vi.waitFor(async () => expect(await queued()).toEqual([]), { timeout: 5_000 });
  });
});
