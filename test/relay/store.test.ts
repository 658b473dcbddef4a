import { mkdtempSync, readFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileStore } from '../../src/relay/file-store.js';
import { createMemoryStore } from '../../src/relay/memory.js';
import { lookupCounter } from '../../src/relay/store.js';

const T = Date.UTC(2026, 10, 23, 9);
const tempFile = () => join(mkdtempSync(join(tmpdir(), 'cdp-store-')), 'state.jsonl');

describe('memory store', () => {
  it('leases fresh ids, reports forwarded ones as duplicates and leased ones as busy', async () => {
    const store = createMemoryStore();
    expect(await store.begin('s', ['a', 'b'], T, 1000)).toEqual({ fresh: ['a', 'b'], duplicate: [], busy: [] });
    expect(await store.begin('s', ['a', 'c'], T, 1000)).toEqual({ fresh: ['c'], duplicate: [], busy: ['a'] });
    await store.commit('s', ['a'], T + 60_000);
    await store.release('s', ['b']);
    expect(await store.begin('s', ['a', 'b'], T + 10, 1000)).toEqual({ fresh: ['b'], duplicate: ['a'], busy: [] });
    // Scopes never mix, and expiry frees an id again.
    expect((await store.begin('other', ['a'], T, 1000)).fresh).toEqual(['a']);
    expect((await store.begin('s', ['a'], T + 60_001, 1000)).fresh).toEqual(['a']);
    // An abandoned lease (a crash mid-forward) expires so the item can go again.
    expect((await store.begin('s', ['c'], T + 2000, 1000)).fresh).toEqual(['c']);
  });

  it('runs a token bucket per scope', async () => {
    const store = createMemoryStore();
    const rate = { perSecond: 1, burst: 2 };
    expect((await store.take('s', rate, T)).ok).toBe(true);
    expect((await store.take('s', rate, T)).ok).toBe(true);
    const empty = await store.take('s', rate, T);
    expect(empty).toEqual({ ok: false, retryAfterMs: 1000 });
    expect((await store.take('t', rate, T)).ok).toBe(true);
    expect((await store.take('s', rate, T + 1000)).ok).toBe(true);
  });

  it('adds to a counter without passing its limit', async () => {
    const store = createMemoryStore();
    const name = lookupCounter(T);
    expect(name).toBe('address-lookup:2026-11');
    expect(await store.add('s', name, 2, 3)).toBe(2);
    expect(await store.add('s', name, 2, 3)).toBe(1);
    expect(await store.add('s', name, 2, 3)).toBe(0);
    expect(await store.add('s', lookupCounter(Date.UTC(2026, 11, 1)), 2, 3)).toBe(2);
  });
});

describe('file-backed store', () => {
  it('remembers forwarded ids and counters across a restart, and forgets expired ids', async () => {
    const file = tempFile();
    const first = createFileStore(file);
    await first.begin('s', ['a', 'b'], Date.now(), 1000);
    await first.commit('s', ['a'], Date.now() + 3600_000);
    await first.commit('s', ['old'], Date.now() + 5);
    await first.add('s', 'address-lookup:2026-11', 4, 10);
    await new Promise((resolve) => setTimeout(resolve, 10));

    const second = createFileStore(file);
    await second.ready;
    const claim = await second.begin('s', ['a', 'b', 'old'], Date.now(), 1000);
    expect(claim).toEqual({ fresh: ['b', 'old'], duplicate: ['a'], busy: [] });
    expect(await second.add('s', 'address-lookup:2026-11', 10, 10)).toBe(6);
    // Compaction at start dropped the expired id from the file.
    expect(readFileSync(file, 'utf8')).not.toContain('"old"');
  });

  it('survives a line cut short by a crash', async () => {
    const file = tempFile();
    const first = createFileStore(file);
    await first.commit('s', ['kept'], Date.now() + 3600_000);
    appendFileSync(file, '{"kind":"forwarded","scope":"s","id":"ha');
    const second = createFileStore(file);
    expect((await second.begin('s', ['kept'], Date.now(), 1000)).duplicate).toEqual(['kept']);
  });
});
