// The systemd unit as shipped: `systemd-analyze verify` accepts it without a word (a directive it
// ignores is a warning with exit 0, so the output must be empty too), `systemd-analyze security`
// rates its exposure 2.0 or less, its stop timeout outlasts the relay's drain, and it runs the
// package's CLI with its state in the unit's StateDirectory.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/relay/core/config.js';
import { root } from './support.js';

const UNIT = join(root, 'deploy', 'systemd', 'cdp-edge-relay.service');
const ANALYZE = process.env['CDP_EDGE_SYSTEMD_ANALYZE'] ?? 'systemd-analyze';

function analyzerAvailable(): boolean {
  if (spawnSync(ANALYZE, ['--version']).status === 0) return true;
  const why = `no ${ANALYZE} on this machine (install the Debian package "systemd")`;
  if (process.env['CDP_EDGE_REQUIRE_SYSTEMD'] === '1') throw new Error(`test/deploy/systemd.test.ts: ${why}, and CDP_EDGE_REQUIRE_SYSTEMD=1 requires it`);
  const line = `SKIPPED: no systemd-analyze — test/deploy/systemd.test.ts did not run: ${why}`;
  console.warn(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n`);
  return false;
}

/** Every `Key=value` of the unit, in order (a key may repeat). */
const directives = () =>
  readFileSync(UNIT, 'utf8')
    .split('\n')
    .map((line) => /^([A-Za-z]+)=(.*)$/.exec(line.trim()))
    .filter((match) => match !== null)
    .map((match) => [match[1]!, match[2]!] as const);
const value = (key: string) => directives().find(([name]) => name === key)?.[1];

describe('deploy/systemd/cdp-edge-relay.service', () => {
  const available = analyzerAvailable();

  it.runIf(available)('passes systemd-analyze verify with nothing to say', () => {
    const verify = spawnSync(ANALYZE, ['verify', UNIT], { encoding: 'utf8' });
    expect(`${verify.stdout}${verify.stderr}`).toBe('');
    expect(verify.status).toBe(0);
  });

  it.runIf(available)('is hardened: systemd-analyze security rates its exposure 2.0 or less', () => {
    const security = spawnSync(ANALYZE, ['security', '--offline=yes', '--threshold=20', '--no-pager', UNIT], { encoding: 'utf8' });
    const overall = /Overall exposure level for .*: ([\d.]+)/.exec(security.stdout)?.[1];
    expect(Number(overall), security.stdout.slice(-400)).toBeLessThanOrEqual(2);
    expect(security.status).toBe(0);
  });

  it('gives the drain time before a kill, restarts on failure but not on a configuration error', () => {
    const { budgetMs } = parseConfig({ CDP_API_KEY: 'k' });
    // Requests inside get the budget + 1 s, then the platform call in flight the budget.
    const drainMs = budgetMs + 1_000 + budgetMs;
    expect(Number(value('TimeoutStopSec')) * 1000).toBeGreaterThan(drainMs);
    expect(value('KillSignal')).toBe('SIGTERM');
    expect(value('Restart')).toBe('on-failure');
    expect(value('RestartPreventExitStatus')).toBe('2');
  });

  it('runs the package CLI as its own user, with the state file in its StateDirectory and settings from an environment file', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; bin: Record<string, string> };
    expect(value('ExecStart')).toMatch(new RegExp(`/node_modules/${pkg.name}/${pkg.bin['cdp-edge']!.replace(/^\.\//, '')} relay( |$)`));
    expect(value('DynamicUser')).toBe('yes');
    expect(value('StateDirectory')).toBe('cdp-edge');
    expect(value('Environment')).toContain('RELAY_STATE_FILE=/var/lib/cdp-edge/');
    expect(value('EnvironmentFile')).toBe('/etc/cdp-edge/relay.env');
    for (const key of ['NoNewPrivileges', 'ProtectSystem', 'PrivateTmp', 'ProtectHome', 'CapabilityBoundingSet', 'SystemCallFilter'])
      expect(value(key), key).toBeDefined();
    expect(value('ProtectSystem')).toBe('strict');
  });
});
