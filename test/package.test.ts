/**
 * The package as a user gets it: the built `dist/` behind the `exports` map (npm test builds first).
 * Imports go through Node's own resolver in a child process, exactly as `import … from 'cdp-edge/client'`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as {
  name: string;
  type: string;
  exports: Record<string, unknown>;
  bin: Record<string, string>;
  sideEffects: boolean;
};

const importInNode = (code: string): string =>
  execFileSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8', timeout: 20_000 }).trim();

describe('the package', () => {
  it('is an ES module package named cdp-edge with a bin and no side effects', () => {
    expect(pkg.name).toBe('cdp-edge');
    expect(pkg.type).toBe('module');
    expect(pkg.sideEffects).toBe(false);
    expect(Object.keys(pkg.bin)).toEqual(['cdp-edge']);
  });

  it('maps every required entry, types first, to files the build produced', () => {
    for (const entry of ['./browser', './react', './next', './next/server', './relay', './relay/cloudflare', './relay/workers', './client', './emulator']) {
      const target = pkg.exports[entry] as Record<string, string>;
      expect(Object.keys(target)[0], entry).toBe('types');
      expect(existsSync(target['types']!), `${entry} types ${target['types']}`).toBe(true);
      expect(existsSync(target['default']!), `${entry} code ${target['default']}`).toBe(true);
    }
  });

  it('ships what users copy or run: the built code, the CLI, the demo and the wrangler.toml template', () => {
    const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8', timeout: 60_000 })) as [
      { files: { path: string }[] },
    ];
    const paths = packed.files.map((file) => file.path);
    for (const file of ['wrangler.toml', 'bin/cdp-edge.js', 'dist/cdp.js', 'dist/cli.js', 'demo/site/index.html', 'README.md'])
      expect(paths, file).toContain(file);
    expect(paths.some((path) => path.startsWith('src/') || path.startsWith('test/'))).toBe(false);
  });

  it('`import { createClient } from "cdp-edge/client"` works from the built output', () => {
    const out = importInNode(`
      import { createClient, HTTPError } from 'cdp-edge/client';
      const client = createClient({ apiKey: 'k', region: 'eu' });
      console.log(JSON.stringify({ base: client.baseUrl, merge: typeof client.person.merge, error: typeof HTTPError }));`);
    expect(JSON.parse(out)).toEqual({ base: 'https://api.eu.ap3api.com', merge: 'function', error: 'function' });
  });

  it('`cdp-edge/react` is a client module on top of `cdp-edge/browser`, with React its peer and nothing bundled', () => {
    const code = readFileSync('dist/react.js', 'utf8');
    expect(code.startsWith("'use client';")).toBe(true);
    expect(code).toContain("from './browser.js'");
    expect(code).toContain("from 'react'");
    expect(code).not.toContain('function createTracker');
    expect(readFileSync('dist/cdp.js', 'utf8')).not.toMatch(/react/i);
    const out = importInNode(`
      import { CdpProvider, useTracker, useIdentify, usePageViews } from 'cdp-edge/react';
      console.log([CdpProvider, useTracker, useIdentify, usePageViews].map((f) => typeof f).join(' '));`);
    expect(out).toBe('function function function function');
  });

  it('`cdp-edge/next` is config code with no import, and `cdp-edge/next/server` signs as the relay checks', () => {
    expect(readFileSync('dist/next/index.js', 'utf8')).not.toMatch(/^import /m);
    const out = importInNode(`
      import { withCdpEdge } from 'cdp-edge/next';
      import { userHashFor } from 'cdp-edge/next/server';
      import { identityHash } from 'cdp-edge/relay';
      const config = withCdpEdge({}, { relay: 'http://127.0.0.1:8787' });
      const { beforeFiles } = await config.rewrites();
      const hash = await userHashFor({ 'str::email': 'ann@example.com' }, 's');
      console.log(JSON.stringify([beforeFiles.map((r) => r.source), hash['str::email'] === (await identityHash('s', 'str::email', 'ann@example.com'))]));`);
    expect(JSON.parse(out)).toEqual([['/t/collect', '/t/cdp.js'], true]);
  });

  it('`cdp-edge/api` exposes the endpoint table with all 29 endpoints', () => {
    const out = importInNode(`import { ENDPOINT_LIST } from 'cdp-edge/api'; console.log(ENDPOINT_LIST.length);`);
    expect(out).toBe('29');
  });
});
