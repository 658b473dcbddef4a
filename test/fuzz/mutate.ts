/**
 * Mutations of valid request bodies for the proxy and emulator suites: one value somewhere in a
 * sample body (SAMPLE_BODIES) replaced by a value of another type, or a key added. Whether the
 * result is still valid is decided by the spec's validator, the oracle of both suites.
 */
import fc from 'fast-check';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every path to a value inside `value`, root excluded. */
function paths(value: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  const children: [string | number, Json][] = Array.isArray(value)
    ? value.map((v, i) => [i, v])
    : value !== null && typeof value === 'object'
      ? Object.entries(value)
      : [];
  for (const [key, child] of children) {
    out.push([...prefix, key]);
    paths(child, [...prefix, key], out);
  }
  return out;
}

function setAt(value: Json, path: (string | number)[], replacement: Json): Json {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((v, i) => (i === head ? setAt(v, rest, replacement) : v));
  const copy: { [key: string]: Json } = { ...(value as { [key: string]: Json }) };
  copy[head as string] = setAt(copy[head as string] as Json, rest, replacement);
  return copy;
}

const odd: fc.Arbitrary<Json> = fc.oneof(
  fc.constantFrom<Json>(null, true, false, 0, -1, 1e308, '', 'x', [], {}, '__proto__', '0'.repeat(24), 'str::email', '$str::is'),
  fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
  fc.string({ maxLength: 40 }),
  fc.integer({ min: 1, max: 400_000 }).map((n) => 'y'.repeat(n)),
);

/** JSON text of `sample` with one value replaced or one key added (sometimes a prototype name). */
export function mutated(sample: unknown): fc.Arbitrary<string> {
  const all = paths(sample as Json);
  const key = fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'filter', 'limit'), fc.string({ maxLength: 10 }));
  const replace =
    all.length === 0
      ? fc.constant(JSON.stringify(sample))
      : fc.tuple(fc.integer({ min: 0, max: all.length - 1 }), odd).map(([i, v]) => JSON.stringify(setAt(sample as Json, all[i]!, v)));
  const add = fc.tuple(key, odd).map(([k, v]) => {
    const text = JSON.stringify(sample);
    return text === '{}' ? `{${JSON.stringify(k)}:${JSON.stringify(v)}}` : `{${JSON.stringify(k)}:${JSON.stringify(v)},${text.slice(1)}`;
  });
  return fc.oneof(replace, add);
}
