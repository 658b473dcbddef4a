/**
 * Where the bytes of dist/cdp.js go: the snippet built as `npm run build` builds it (rollup.config.mjs,
 * TypeScript's emit then terser), with a source map, each byte of the output given to the source
 * file its mapping points at.
 *
 *   npx tsx bench/diagnose/snippet-bytes.ts            per source file
 *   TOP=60 npx tsx bench/diagnose/snippet-bytes.ts --lines   the 60 (default 40) dearest source lines
 *
 * Per source file: its minified bytes, the gzip (level 9) of those bytes alone, and its marginal
 * gzip: the whole file's gzip less the gzip of the whole without that file's bytes. The marginal
 * figure is what taking the module out would save (gzip finds the module's repeats elsewhere in
 * the file); the parts don't add up to the whole, because what two modules share is in neither
 * marginal figure. Bytes the map gives no source (the IIFE's wrapper) are `(none)`. The mappings
 * are read with @jridgewell/sourcemap-codec, which rollup's own tool chain installs (terser, magic-string).
 */
import { decode } from '@jridgewell/sourcemap-codec';
import { relative, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { rollup, type RollupOptions } from 'rollup';

// A path in a variable: the config is plain JavaScript, with no types for TypeScript to check.
const configFile = '../../rollup.config.mjs';
const configs = (await import(configFile)).default as RollupOptions[];
const config = configs.find((c) => !Array.isArray(c.output) && c.output?.file === 'dist/cdp.js');
if (!config) throw new Error('no dist/cdp.js entry in rollup.config.mjs');

const bundle = await rollup({ ...config, onwarn: () => {} });
const { output } = await bundle.generate({ ...(config.output as object), sourcemap: true });
await bundle.close();
const { map } = output[0];
// Without the sourceMappingURL comment that a source-mapped build adds: the bytes `npm run build` ships.
const code = output[0].code.replace(/\/\/# sourceMappingURL=\S*\s*$/, '');
if (!map) throw new Error('no source map');

const gz = (text: string) => gzipSync(text, { level: 9 }).length;
const lines = code.split('\n');
// Each output character's source file, by the segment that covers it.
const owner: string[] = [];
// `--lines`: by source line instead of file, the 40 dearest lines.
const byLine = process.argv.includes('--lines');
decode(map.mappings).forEach((segments, line) => {
  const text = lines[line] ?? '';
  const base = owner.length;
  owner.length += text.length + 1;
  owner.fill('(none)', base, owner.length);
  segments.forEach((segment, index) => {
    const end = segments[index + 1]?.[0] ?? text.length;
    const file = segment.length > 1 ? relative(process.cwd(), resolve('dist', map.sources[segment[1]!]!)) : '(none)';
    const source = byLine && segment.length > 2 ? `${file}:${segment[2]! + 1}` : file;
    owner.fill(source, base + segment[0], base + end);
  });
});

const whole = gz(code);
const files = [...new Set(owner)];
const rows = files
  .map((file) => {
    const mine = [...code].filter((_, i) => owner[i] === file).join('');
    const rest = [...code].filter((_, i) => owner[i] !== file).join('');
    return { file, raw: mine.length, gzipAlone: gz(mine), marginal: whole - gz(rest) };
  })
  .sort((x, y) => y.marginal - x.marginal)
  .slice(0, byLine ? Number(process.env['TOP'] ?? 40) : undefined);

console.log(`dist/cdp.js as built: ${code.length} B raw, ${whole} B gzip`);
console.table(rows);
