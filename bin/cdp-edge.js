#!/usr/bin/env node
// The CLI lives in the built output; `npm run build` (run by `npm start` and `npm test`) makes it.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
if (!existsSync(cli)) {
  console.error('cdp-edge: dist/cli.js is missing. Run `npm run build` first.');
  process.exit(1);
}
const { main } = await import(cli);
process.exitCode = await main(process.argv.slice(2));
