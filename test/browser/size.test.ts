import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

// `npm test` builds first (pretest); the bytes of dist/cdp.js are deterministic.
describe('dist/cdp.js', () => {
  const bytes = readFileSync(resolve(process.cwd(), 'dist/cdp.js'));

  it('weighs at most 4 KB gzipped, idb-keyval included', () => {
    expect(gzipSync(bytes, { level: 9 }).length).toBeLessThanOrEqual(4096);
  });

  it('needs no eval (a strict CSP page can run it) and nothing from Node or the server side', () => {
    const text = bytes.toString();
    expect(text).not.toMatch(/\beval\(|new Function|node:|valibot|hono/);
    expect(text.startsWith('!function(){')).toBe(true);
  });
});
