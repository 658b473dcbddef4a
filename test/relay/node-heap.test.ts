/**
 * The Node relay's memory flags. Its heap under promotion (src/relay/node/heap.ts): once started, the process lets
 * its old generation grow to about 1.5× what survived the last major GC, not the up to 4× V8
 * picks on a machine with memory to spare, when the CLI runs it and the process was not given its
 * own `--heap-growing-percent`; `startRelay` in a user's own server leaves the flag alone. Each case is a process of its own (test/relay/support/heap-child.ts)
 * that keeps about 35 MB alive while promoting 600 MB of garbage, and reports the largest old
 * space it saw and its live old space after a full GC. And WebAssembly kept on V8's baseline
 * compiler (src/relay/node/malloc.ts): a hot function compiled once the CLI's relay started (as
 * undici's HTTP parser is) is not recompiled with TurboFan, whose compile zone, freed, raised
 * glibc's trim threshold to 4.5 MB for the process's life.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { heapGrowthGiven } from '../../src/relay/node/heap.js';
import { wasmTieringGiven } from '../../src/relay/node/malloc.js';

const root = join(import.meta.dirname, '..', '..');
const tsx = pathToFileURL(join(root, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const child = join(import.meta.dirname, 'support', 'heap-child.ts');

async function heapOf(mode: 'cli' | 'embedded', flags: string[] = []): Promise<{ peakOldMb: number; liveOldMb: number; bounded: boolean }> {
  const { stdout } = await promisify(execFile)(process.execPath, [...flags, '--expose-gc', '--import', tsx, child, mode], {
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { peakOldMb: number; liveOldMb: number; bounded: boolean };
}

describe('the relay CLI bounds how far its old generation grows', () => {
  // Measured: 2.1× idle, up to 3.1× beside three busy loops on 2 cores (V8 marks behind the
  // allocation when its threads wait); V8 alone 5.2–8×.
  it('keeps the old space within 4× its live size while garbage is promoted (V8 alone let it reach 5–8×)', async () => {
    const { peakOldMb, liveOldMb, bounded } = await heapOf('cli');
    expect(bounded).toBe(true);
    expect(liveOldMb).toBeGreaterThan(30);
    expect(peakOldMb).toBeLessThanOrEqual(4 * liveOldMb);
  }, 60_000);

  it("leaves a process's own --heap-growing-percent", async () => {
    const given = await heapOf('cli', ['--heap-growing-percent=500']);
    expect(given.bounded).toBe(false);
    expect(given.peakOldMb).toBeGreaterThan(4 * given.liveOldMb);
    expect(heapGrowthGiven(['--heap-growing-percent=500'])).toBe(true);
    expect(heapGrowthGiven(['--max-old-space-size=512', '--heap_growing_percent=20'])).toBe(true);
    expect(heapGrowthGiven(['--expose-gc', '--max-old-space-size=512'])).toBe(false);
  }, 60_000);

  it("leaves the heap of a user's own server that calls startRelay alone (the flag is the whole process's)", async () => {
    expect((await heapOf('embedded')).bounded).toBe(false);
  }, 60_000);
});

async function wasmOf(mode: 'cli' | 'embedded'): Promise<{ turbofan: boolean; liftoff: boolean }> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--allow-natives-syntax', '--import', tsx, child, mode, 'wasm'], {
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { turbofan: boolean; liftoff: boolean };
}

describe('the relay CLI keeps WebAssembly on Liftoff', () => {
  it('does not recompile a hot WebAssembly function with TurboFan (V8 alone does within 3 s)', async () => {
    expect(await wasmOf('cli')).toEqual({ turbofan: false, liftoff: true });
  }, 60_000);

  it("leaves a user's own server that calls startRelay alone, and a process's own flag", async () => {
    expect(await wasmOf('embedded')).toEqual({ turbofan: true, liftoff: false });
    expect(wasmTieringGiven(['--no-liftoff-only'])).toBe(true);
    expect(wasmTieringGiven(['--expose-gc', '--wasm-tier-up'])).toBe(true);
    expect(wasmTieringGiven(['--wasm_dynamic_tiering=false'])).toBe(true);
    expect(wasmTieringGiven(['--liftoff'])).toBe(true);
    expect(wasmTieringGiven(['--expose-gc', '--max-old-space-size=512'])).toBe(false);
  }, 60_000);
});
