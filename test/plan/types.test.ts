// `cdp-edge plan types`: the generated module makes track() and identify() checked by tsc.
// The fixture's @ts-expect-error lines must each fail (proved twice: tsc passes with the
// directives, and a copy without them has an error on exactly those lines); the other lines must
// pass. Every usage file is checked in one tsc program (each is its own module), once.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli.js';
import { STRICT, typecheck as tsc } from './tsc.js';

const root = join(import.meta.dirname, '..', '..');
const browser = join(root, 'src', 'browser', 'index.js');
let dir: string;

const PLAN = {
  activities: [
    {
      id: 'act:cm:signed-up',
      name: 'signed-up',
      attributes: [
        { name: 'plan', type: 'single_select', values: ['free', 'pro'], required: true },
        { name: 'seats', type: 'integer' },
        { name: 'trial', type: 'bool' },
      ],
    },
    { id: 'act:cm:page-view', name: 'page-view', attributes: [{ name: 'path', type: 'text' }] },
  ],
  person_fields: [{ name: 'tier', type: 'text' }],
  sites: [{ key: 'pk_shop', activities: ['act:cm:page-view'], fields: ['str::email'] }],
};

// With --site, only what that site may send: here page views, and the email to identify.
const SITE_USAGE = `import { createTracker } from ${JSON.stringify(browser)};
import { typed } from './shop.js';

const cdp = typed(createTracker({ relay: 'https://t.example.com', key: 'pk_shop' }));
void cdp.track('act:cm:page-view', { 'str:cm:path': '/' });
void cdp.identify({ 'str::email': 'ann@example.com' });
// an activity of the plan this site may not send
// @ts-expect-error
void cdp.track('act:cm:signed-up', { 'str:cm:plan': 'pro' });
// a person field this site may not send
// @ts-expect-error
void cdp.identify({ 'str::email': 'ann@example.com', 'str::first': 'Ann' });
`;

// One mistake per expect-error line; the comment above it says which of the five kinds it is.
const TYPED_USAGE = `import { createTracker } from ${JSON.stringify(browser)};
import { typed } from './plan.js';

const cdp = typed(createTracker({ relay: 'https://t.example.com', key: 'pk_test' }));
void cdp.track('act:cm:signed-up', { 'str:cm:plan': 'pro', 'int:cm:seats': 3, 'bol:cm:trial': false });
void cdp.track('act:cm:signed-up', { 'str:cm:plan': 'free' }, { location: { custom: { city_name: 'Paris' } } });
void cdp.track('act:cm:page-view');
void cdp.track('act:cm:page-view', { 'str:cm:path': '/pricing' });
void cdp.identify({ 'str::email': 'ann@example.com', 'str::first': 'Ann', 'str:cm:tier': 'gold' }, { tags: ['trial'] });
void cdp.page();
void cdp.flush();
// unknown activity ID
// @ts-expect-error
void cdp.track('act:cm:signup', { 'str:cm:plan': 'pro' });
// unknown attribute
// @ts-expect-error
void cdp.track('act:cm:signed-up', { 'str:cm:plan': 'pro', 'str:cm:coupon': 'WELCOME' });
// wrong value type: a string for an int: attribute
// @ts-expect-error
void cdp.track('act:cm:signed-up', { 'str:cm:plan': 'pro', 'int:cm:seats': '3' });
// wrong value: not one of a single_select's values
// @ts-expect-error
void cdp.track('act:cm:signed-up', { 'str:cm:plan': 'platinum' });
// missing required attribute
// @ts-expect-error
void cdp.track('act:cm:signed-up', { 'int:cm:seats': 3 });
// missing required attribute: no attributes at all
// @ts-expect-error
void cdp.track('act:cm:signed-up');
// identify: unknown field
// @ts-expect-error
void cdp.identify({ 'str::emial': 'ann@example.com' });
// identify: wrong value type
// @ts-expect-error
void cdp.identify({ 'bol::gdpr': 'yes' });
`;

// Without the generated module the tracker stays as loose as before: any ID, any attributes.
const LOOSE_USAGE = `import { createTracker } from ${JSON.stringify(browser)};
const cdp = createTracker({ relay: 'https://t.example.com', key: 'pk_test' });
void cdp.track('act:cm:signup', { 'str:cm:coupon': 'WELCOME', 'int:cm:seats': '3' });
void cdp.identify({ 'str::emial': 'ann@example.com', 'bol::gdpr': 'yes' });
`;

const FLAGS = [...STRICT, '--exactOptionalPropertyTypes', '--lib', 'es2023,dom'];

/** The usage files, each checked against the generated modules. */
const USAGES = { typed: 'usage.ts', bare: 'usage-bare.ts', loose: 'loose.ts', site: 'site-usage.ts' } as const;
/** Each usage's lines of the report (its errors), from one check of all of them. */
let reports: Record<keyof typeof USAGES, string>;
/** The exit codes of `plan types --site` for a site of the plan, and for one it does not have. */
let siteCodes: number[];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cdp-edge-types-'));
  writeFileSync(join(dir, 'cdp-edge.plan.json'), JSON.stringify(PLAN));
  vi.spyOn(console, 'log').mockImplementation(() => {});
  const code = await main(['plan', 'types', '--plan', join(dir, 'cdp-edge.plan.json'), '--out', join(dir, 'plan.ts'), '--import-from', browser]);
  const args = ['plan', 'types', '--plan', join(dir, 'cdp-edge.plan.json'), '--import-from', browser, '--site'];
  siteCodes = [await main([...args, 'pk_shop', '--out', join(dir, 'shop.ts')])];
  vi.spyOn(console, 'error').mockImplementation(() => {});
  siteCodes.push(await main([...args, 'pk_nope', '--out', join(dir, 'nope.ts')]));
  vi.restoreAllMocks();
  expect(code).toBe(0);
  writeFileSync(join(dir, USAGES.typed), TYPED_USAGE);
  writeFileSync(join(dir, USAGES.bare), bare(TYPED_USAGE));
  writeFileSync(join(dir, USAGES.loose), LOOSE_USAGE);
  writeFileSync(join(dir, USAGES.site), SITE_USAGE);
  const files = Object.values(USAGES).map((name) => join(dir, name));
  const checked = tsc([...FLAGS, ...files]);
  const of = (name: string) => checked.reportOf(join(dir, name));
  reports = { typed: of(USAGES.typed), bare: of(USAGES.bare), loose: of(USAGES.loose), site: of(USAGES.site) };
  // Nothing else is reported (the options, the generated modules, the snippet's sources).
  expect(checked.reported.filter((file) => !files.includes(file))).toEqual([]);
}, 120_000);

/** `usage` without its @ts-expect-error directives (blank lines instead: same line numbers). */
const bare = (usage: string) =>
  usage
    .split('\n')
    .map((line) => (line === '// @ts-expect-error' ? '' : line))
    .join('\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('cdp-edge plan types', () => {
  it("writes a module with the plan's activities, attribute field IDs and person fields", () => {
    const code = readFileSync(join(dir, 'plan.ts'), 'utf8');
    expect(code).toContain(`import type { IdentifyOptions, Tracker, TrackOptions } from ${JSON.stringify(browser)};`);
    expect(code).toContain(`"str:cm:plan": "free" | "pro"`);
    expect(code).toContain(`"int:cm:seats"?: number | null;`);
    expect(code).toContain(`"str:cm:tier"?: string | null;`);
    expect(code).toContain('export const typed = ');
  });

  it('compiles correct calls and rejects each kind of mistake', () => {
    expect(reports.typed).toBe('');
    // Without the directives, tsc must report an error on every line that followed one, and on no other line.
    const expected = TYPED_USAGE.split('\n').flatMap((line, index) => (line === '// @ts-expect-error' ? [index + 2] : []));
    expect(expected).toHaveLength(8);
    const failing = [...new Set([...reports.bare.matchAll(/usage-bare\.ts\((\d+),\d+\): error TS\d+/g)].map((match) => Number(match[1])))];
    expect(failing).toEqual(expected);
  });

  it('leaves createTracker as loose as before when the generated module is not used', () => {
    expect(reports.loose).toBe('');
  });

  it('--site narrows track() and identify() to what that site may send', () => {
    // pk_nope is not a site of the plan: refused.
    expect(siteCodes).toEqual([0, 1]);
    expect(reports.site).toBe('');
  });

  it('refuses types without --out', async () => {
    const errors: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((message: string) => errors.push(message));
    const code = await main(['plan', 'types', '--plan', join(dir, 'cdp-edge.plan.json')]);
    vi.restoreAllMocks();
    expect(code).toBe(2);
    expect(errors[0]).toMatch(/types needs --out FILE/);
  });
});
