// `cdp-edge plan diff | push` run through the CLI's own entry, against a real emulator over HTTP,
// directly (CDP_BASE_URL + CDP_API_KEY) and through the relay's proxy (--relay URL --token T).
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/node.js';
import { startRelay } from '../../src/relay/node.js';
import { createToken } from '../../src/relay/core/tokens.js';

const root = join(import.meta.dirname, '..', '..');
let dir: string;
let emulator: RunningEmulator;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'cdp-edge-plan-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
  await emulator?.close();
});

/** Runs `cdp-edge …` in this process; resolves with the exit code and every printed line. */
async function cli(args: string[]): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const keep = (...parts: unknown[]) => lines.push(parts.join(' '));
  vi.spyOn(console, 'log').mockImplementation(keep);
  vi.spyOn(console, 'error').mockImplementation(keep);
  try {
    const code = await main(args);
    return { code, lines: lines.join('\n').split('\n') };
  } finally {
    vi.restoreAllMocks();
  }
}

/** A copy of the demo plan in a fresh folder (so each test has its own lock file). */
function planCopy(name: string): string {
  const file = join(dir, `${name}.plan.json`);
  copyFileSync(join(root, 'demo', 'cdp-edge.plan.json'), file);
  return file;
}

const useEmulator = async () => {
  emulator = await startEmulator({ port: 0, key: 'plan-key' });
  vi.stubEnv('CDP_BASE_URL', emulator.url);
  vi.stubEnv('CDP_API_KEY', 'plan-key');
  vi.stubEnv('CDP_REGION', '');
};

describe('cdp-edge plan push', () => {
  it('creates every field and definition once; a second push changes nothing; diff shows what push would do', async () => {
    await useEmulator();
    const plan = planCopy('once');

    const before = await cli(['plan', 'diff', '--plan', plan]);
    expect(before.code).toBe(0);
    expect(before.lines.at(-1)).toBe('plan diff: created 4, modified 0, unchanged 0');
    expect(emulator.emulator.snapshot().activities).toHaveLength(0);

    const first = await cli(['plan', 'push', '--plan', plan]);
    expect(first.code).toBe(0);
    expect(first.lines).toContain('  + activity act:cm:signed-up: created');
    expect(first.lines.at(-1)).toBe('plan push: created 4, modified 0, unchanged 0');
    const state = emulator.emulator.snapshot();
    expect(state.activities.map((a) => a.activity_field_id).sort()).toEqual(['act:cm:added-to-cart', 'act:cm:page-view', 'act:cm:signed-up']);
    const signup = state.activities.find((a) => a.activity_field_id === 'act:cm:signed-up')!;
    expect(signup.icon_id).toBe('happy-illustration-icon');
    expect(signup.attributes.map((a) => [a.field_id, a.display_type])).toEqual([['str:cm:plan', 'single_select']]);
    const edited = state.activities.map((a) => a.edited_at);

    const second = await cli(['plan', 'push', '--plan', plan]);
    expect(second.lines.at(-1)).toBe('plan push: created 0, modified 0, unchanged 4');
    expect(emulator.emulator.snapshot().activities.map((a) => a.edited_at)).toEqual(edited);
    expect((await cli(['plan', 'diff', '--plan', plan])).lines.at(-1)).toBe('plan diff: created 0, modified 0, unchanged 4');
  });

  it('modifies a changed definition, and adopts one that exists but is not in the lock (create answers 409)', async () => {
    await useEmulator();
    const plan = planCopy('change');
    await cli(['plan', 'push', '--plan', plan]);

    const edited = JSON.parse(readFileSync(plan, 'utf8'));
    edited.activities[2].icon = 'flag-activities-illustration-icon';
    writeFileSync(plan, JSON.stringify(edited));
    const diff = await cli(['plan', 'diff', '--plan', plan]);
    expect(diff.lines).toContain('  ~ activity act:cm:signed-up: would be modified');
    const push = await cli(['plan', 'push', '--plan', plan]);
    expect(push.lines.at(-1)).toBe('plan push: created 0, modified 1, unchanged 3');
    expect(emulator.emulator.snapshot().activities.find((a) => a.activity_field_id === 'act:cm:signed-up')!.icon_id).toBe('flag-activities-illustration-icon');

    // the lock is lost: every definition already exists; push adopts them, then is idempotent again
    rmSync(plan.replace(/\.json$/, '.lock.json'));
    const adopt = await cli(['plan', 'push', '--plan', plan]);
    expect(adopt.lines).toContain('  ~ activity act:cm:page-view: modified (it existed already; adopted into the plan)');
    expect(adopt.lines.at(-1)).toBe('plan push: created 0, modified 3, unchanged 1');
    expect(emulator.emulator.snapshot().activities).toHaveLength(3);
    expect((await cli(['plan', 'push', '--plan', plan])).lines.at(-1)).toBe('plan push: created 0, modified 0, unchanged 4');
  });

  it('pushes through the relay proxy with a token', async () => {
    emulator = await startEmulator({ port: 0, key: 'plan-key' });
    const { token, entry } = await createToken({ name: 'plan', scopes: ['read', 'write'] });
    const relay = await startRelay({
      port: 0,
      logger: () => {},
      env: { CDP_API_KEY: 'plan-key', CDP_BASE_URL: emulator.url, RELAY_TOKENS: JSON.stringify([entry]) },
    });
    try {
      vi.stubEnv('CDP_API_KEY', '');
      const plan = planCopy('relay');
      const first = await cli(['plan', 'push', '--plan', plan, '--relay', relay.url, '--token', token]);
      expect(first.lines.at(-1)).toBe('plan push: created 4, modified 0, unchanged 0');
      expect(emulator.emulator.snapshot().activities).toHaveLength(3);
      const bad = await cli(['plan', 'push', '--plan', plan, '--relay', relay.url, '--token', 'not-a-token']);
      expect(bad.code).toBe(1);
      expect(bad.lines.join('\n')).toMatch(/401/);
    } finally {
      await relay.close();
    }
  });

  it('refuses bad input with a clear message and writes nothing', async () => {
    await useEmulator();
    const broken = join(dir, 'broken.plan.json');
    writeFileSync(broken, JSON.stringify({ activities: [{ id: 'act:cm:x', name: 'x', attributes: [{ name: 'n', type: 'int' }] }] }));
    const check = await cli(['plan', 'check', '--plan', broken]);
    expect(check.code).toBe(1);
    expect(check.lines.join('\n')).toContain('activities[0].attributes[0].type: unknown type "int"');
    expect((await cli(['plan', 'push', '--plan', broken])).code).toBe(1);
    expect(emulator.emulator.snapshot().activities).toHaveLength(0);

    const missing = await cli(['plan', 'check', '--plan', join(dir, 'nope.json')]);
    expect(missing.code).toBe(1);
    expect(missing.lines.join('\n')).toMatch(/cannot read the tracking plan .*nope\.json: ENOENT/);
    expect((await cli(['plan', 'frobnicate'])).lines[0]).toBe('cdp-edge plan: give one of check, diff, push, types; got "frobnicate"');
    vi.stubEnv('CDP_API_KEY', '');
    const noTarget = await cli(['plan', 'push', '--plan', planCopy('notarget')]);
    expect(noTarget.code).toBe(2);
    expect(noTarget.lines[0]).toMatch(/set CDP_API_KEY/);
  });
});
