/**
 * README.md's React block, run as written: bundled by esbuild against the built `cdp-edge/react`
 * (dist/react.js, which `npm test` builds first) and rendered under <StrictMode> in happy-dom. The
 * visitor is identified once with the proof, one page view goes for the route, and the button's
 * track follows, each once.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { act, createElement, type FunctionComponent, type ReactNode, StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Tracker } from '../../src/browser/index.js';
import { readmeBlocks } from '../readme-blocks.js';
import { ensureBuilt, root } from '../support/built.js';
import { ann, fakeRelay } from './support.js';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;
const realFetch = globalThis.fetch;
// A single file run while working rebuilds dist/ when a source is newer (npm test builds first).
beforeAll(ensureBuilt, 180_000);
afterAll(() => {
  globalThis.fetch = realFetch;
});

/** The README block as a module the test can import; React stays the test's own. */
async function readmeModule() {
  const block = readmeBlocks().find((b) => b.lang === 'jsx' && b.code.includes("from 'cdp-edge/react'"));
  expect(block, 'README.md has a jsx block importing cdp-edge/react').toBeDefined();
  const out = await build({
    stdin: { contents: block!.code, loader: 'jsx', resolveDir: root },
    bundle: true,
    write: false,
    format: 'esm',
    jsx: 'automatic',
    external: ['react', 'react/*'],
    alias: { 'cdp-edge/react': join(root, 'dist', 'react.js') },
    logLevel: 'silent',
  });
  const dir = join(root, 'node_modules', '.cache', 'cdp-edge-readme');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `react-block-${process.pid}.mjs`);
  writeFileSync(file, out.outputFiles[0]!.contents);
  return (await import(/* @vite-ignore */ pathToFileURL(file).href)) as {
    Root: FunctionComponent<{ children?: ReactNode; pathname: string; user: { email: string; userHash: string } | null }>;
    SignUp: FunctionComponent;
  };
}

/** The page's trackers, where cdp-edge/react keeps them. */
const pageTrackers = () => (globalThis as unknown as Record<symbol, { trackers: Map<string, Tracker> }>)[Symbol.for('cdp-edge.react')]!.trackers;

describe("README.md's React block", () => {
  it('identifies once with the proof, sends one page view and the button track, under StrictMode', async () => {
    const { Root, SignUp } = await readmeModule();
    const relay = fakeRelay();
    globalThis.fetch = relay.fetch;
    const container = document.body.appendChild(document.createElement('div'));
    const reactRoot = createRoot(container);
    const user = { email: ann['str::email'], userHash: 'c'.repeat(64) };
    await act(() => reactRoot.render(createElement(StrictMode, null, createElement(Root, { pathname: '/', user }, createElement(SignUp)))));
    await act(() => container.querySelector('button')!.click());
    const tracker = pageTrackers().get('https://t.example.com\n\npk_live_123')!;
    await tracker.flush();
    expect(relay.sent.every((sent) => sent.url === 'https://t.example.com/collect' && sent.body.key === 'pk_live_123')).toBe(true);
    const items = relay.items();
    expect(items.filter((item) => item.type === 'identify')).toEqual([expect.objectContaining({ fields: ann, user_hash: 'c'.repeat(64) })]);
    expect(items.flatMap((item) => (item.type === 'track' ? [item.activity_id] : []))).toEqual(['act:cm:page-view', 'act:cm:signed-up']);
    await act(() => reactRoot.unmount());
  });
});
