// Builds every part of cdp-edge from src/ into dist/:
//  - dist/cdp.js      the snippet as a minified IIFE (served by the relay at /cdp.js)
//  - dist/browser.js  the snippet as ESM for SPAs
//  - dist/{api,client,relay,emulator}/…, dist/server.js (+ dist/server/spool.js) and dist/cli.js as ESM for Node, Workers, Deno, Bun
//  - dist/react.js    cdp-edge/react: React as a peer, the tracker imported from ./browser.js
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import typescript from '@rollup/plugin-typescript';
import { nodeResolve } from '@rollup/plugin-node-resolve';
import esbuild from 'rollup-plugin-esbuild';
import terser from '@rollup/plugin-terser';
import pkg from './package.json' with { type: 'json' };

const dependencies = Object.keys(pkg.dependencies ?? {});
const isExternal = (id) => id.startsWith('node:') || id.startsWith('cloudflare:') || dependencies.some((dep) => id === dep || id.startsWith(`${dep}/`));

const serverEntries = Object.fromEntries(
  [
    ['api/index', 'src/api/index.ts'],
    ['client/index', 'src/client/index.ts'],
    ['relay/index', 'src/relay/index.ts'],
    ['relay/cloudflare', 'src/relay/cloudflare.ts'],
    ['relay/workers', 'src/relay/workers/index.ts'],
    ['relay/node', 'src/relay/node.ts'],
    ['emulator/index', 'src/emulator/index.ts'],
    ['plan/index', 'src/plan/index.ts'],
    ['server', 'src/server/index.ts'],
    ['server/spool', 'src/server/spool.ts'],
    ['next/index', 'src/next/index.ts'],
    ['next/server', 'src/next/server.ts'],
    ['consent/index', 'src/consent/index.ts'],
    ['cli', 'src/cli.ts'],
  ].filter(([, file]) => existsSync(file)),
);

// Declarations (dist/**/*.d.ts) come from one `tsc --emitDeclarationOnly` over src (the `build`
// script), not from each bundle's own TypeScript program: the ESM bundles only strip types, with
// esbuild, at the tsconfig's target.
const stripTypes = () => esbuild({ target: 'es2022', sourceMap: true });

// The minified IIFEs (cdp.js, cdp-consent.js) go through TypeScript's own emit, whose output
// terser was tuned on (the snippet's bytes are budgeted).
const tsOptions = (include) => ({
  tsconfig: './tsconfig.build.json',
  include,
  filterRoot: process.cwd(),
  // Types are checked once by `npm run typecheck` (part of npm test); the build only emits.
  compilerOptions: { noCheck: true },
  noEmitOnError: false,
});

// The snippet and the parts of the API it may import (types and constants only).
const BROWSER_SOURCES = ['src/browser/**/*.ts', 'src/api/collect.ts', 'src/api/types.ts', 'src/api/limits.ts'];

const terserOptions = {
  ecma: 2020,
  module: true,
  // inline: 1 inlines only simple functions, which gzips smaller here; unsafe_math only folds constants.
  compress: { passes: 3, unsafe_arrows: true, pure_getters: true, unsafe: true, unsafe_math: true, inline: 1 },
  // Internal property names of src/browser (queue, scheduler, events): never part of the wire
  // format, the stored records or the public API, so terser may shorten them.
  mangle: {
    properties: { builtins: true, regex: /^(held|entry|bytes|row|writeNumber|writes|settle|stored|waiting|failed|plan|cancel|succeeded|remove|adopt|emit)$/ },
  },
  format: { comments: false, wrap_func_args: false },
};

const configs = [
  {
    input: serverEntries,
    external: isExternal,
    plugins: [stripTypes()],
    output: { dir: 'dist', format: 'es', entryFileNames: '[name].js', chunkFileNames: 'chunks/[name]-[hash].js', sourcemap: true },
  },
];

if (existsSync('src/browser/index.ts')) {
  configs.push(
    {
      input: { browser: 'src/browser/index.ts' },
      plugins: [
        nodeResolve({ browser: true }),
        stripTypes(),
        // package.json points `cdp-edge/browser` types at dist/browser.d.ts.
        {
          name: 'browser-types',
          generateBundle() {
            this.emitFile({ type: 'asset', fileName: 'browser.d.ts', source: "export * from './browser/index.js';\n" });
          },
        },
      ],
      output: { dir: 'dist', format: 'es', entryFileNames: '[name].js', sourcemap: true },
    },
    {
      input: 'src/browser/iife.ts',
      plugins: [nodeResolve({ browser: true }), typescript(tsOptions(BROWSER_SOURCES)), terser(terserOptions)],
      output: { file: 'dist/cdp.js', format: 'iife', sourcemap: false },
    },
  );
}

if (existsSync('src/react/index.ts')) {
  // The browser entry stays one module: dist/react.js imports ./browser.js (what `cdp-edge/browser`
  // resolves to), so an app that imports both gets one tracker code and one page registry.
  const browserEntry = resolve('src/browser/index.ts');
  configs.push({
    input: { react: 'src/react/index.ts' },
    external: (id, importer) =>
      id === 'react' || id.startsWith('react/') || (importer !== undefined && resolve(dirname(importer), id).replace(/\.js$/, '.ts') === browserEntry),
    plugins: [
      stripTypes(),
      {
        name: 'react-types',
        generateBundle() {
          this.emitFile({ type: 'asset', fileName: 'react.d.ts', source: "export * from './react/index.js';\n" });
        },
      },
    ],
    // Hooks and context: a client component in React Server Components apps (Next.js App Router).
    output: {
      dir: 'dist',
      format: 'es',
      entryFileNames: '[name].js',
      sourcemap: true,
      banner: "'use client';",
      paths: (id) => (id.startsWith('/') ? './browser.js' : id),
    },
  });
}

// dist/cdp-consent.js: the consent adapters for a script tag, minified like cdp.js.
if (existsSync('src/consent/iife.ts')) {
  configs.push({
    input: 'src/consent/iife.ts',
    plugins: [typescript(tsOptions(['src/consent/**/*.ts'])), terser(terserOptions)],
    output: { file: 'dist/cdp-consent.js', format: 'iife', sourcemap: false },
  });
}

export default configs;
