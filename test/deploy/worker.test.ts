/**
 * The Worker as users deploy it: the shipped wrangler.toml with only `main` pointed at the built
 * dist/relay/cloudflare.js, run by the project's own wrangler on Node 22. `wrangler dev` serves
 * it (workerd loads the built entry exactly as on Cloudflare) against the emulator over real HTTP;
 * `wrangler deploy --dry-run` bundles it. Vars come in as `--var` (a secret, the upstream, a site
 * that allows the test's origin); everything else is the template as shipped.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { freePort } from '../support/redis.js';
import { type Child, collect, collectOne, deliveredCount, eventsOf, KEY, node22, root, SITES, start, upstream } from './support.js';

const WRANGLER = join(root, 'node_modules', 'wrangler', 'bin', 'wrangler.js');
const ENTRY = join(root, 'dist', 'relay', 'cloudflare.js');
const node = node22('the shipped Worker under wrangler (test/deploy/worker.test.ts)');

/**
 * The shipped template with `main` pointed at the built entry. Fails unless the template has one
 * `main` line naming what `cdp-edge/relay/cloudflare` resolves to in an installed package.
 */
function configFrom(template: string): string {
  const mains = [...template.matchAll(/^main = "(.*)"$/gm)].map((match) => match[1]);
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, { default: string }> };
  expect(mains).toEqual([join('node_modules', 'cdp-edge', pkg.exports['./relay/cloudflare']!.default)]);
  return template.replace(/^main = .*$/m, `main = ${JSON.stringify(ENTRY)}`);
}

describe.runIf(node)('the Worker from the shipped wrangler.toml, built', () => {
  let emulator: RunningEmulator;
  let dir: string;
  let config: string;
  const vars = () => ['--var', `CDP_API_KEY:${KEY}`, '--var', `CDP_BASE_URL:${emulator.url}`, '--var', `RELAY_SITES:${SITES}`];
  // wrangler without its usage reports or update checks: the tests need no network.
  const env = () => ({ ...process.env, WRANGLER_SEND_METRICS: 'false', WRANGLER_SEND_ERROR_REPORTS: 'false', NO_UPDATE_NOTIFIER: '1', CI: '1' });

  beforeAll(async () => {
    emulator = await upstream();
    dir = mkdtempSync(join(tmpdir(), 'cdp-deploy-worker-'));
    config = join(dir, 'wrangler.toml');
    writeFileSync(config, configFrom(readFileSync(join(root, 'wrangler.toml'), 'utf8')));
  });
  afterAll(async () => {
    await emulator?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('wrangler dev', () => {
    let dev: Child;
    let url: string;
    beforeAll(async () => {
      const [port, inspector] = [await freePort(), await freePort()];
      dev = start(node!, [WRANGLER, 'dev', '--config', config, '--ip', '127.0.0.1', '--port', String(port), '--inspector-port', String(inspector), ...vars()], {
        cwd: dir,
        env: env(),
      });
      url = (await dev.waitFor(/Ready on (http:\/\/\S+)/, 90_000))[1]!;
    }, 120_000);
    afterAll(() => dev?.stop());

    it('answers /healthz', async () => {
      // workerd loads the module on the first request: a refused entry shows here.
      const response = await fetch(`${url}/healthz`);
      expect(response.status, dev.output()).toBe(200);
      expect(await response.json()).toEqual({ ok: true });
    });

    it('answers a /collect accepted, and the item reaches the upstream once', async () => {
      const email = 'worker-deploy@example.com';
      expect(await collectOne(url, email)).toBe('accepted');
      expect(await deliveredCount(emulator, url, email)).toBe(1);
    }, 90_000);

    it('serves requests side by side without settling one request’s promise from another', async () => {
      // Each HTTP request is a request context of its own in workerd: a promise made in one and
      // settled from another after the first ended is refused (its waiters are dropped, the work
      // behind it hangs) and workerd warns. 30 /collect of 5 items at once beside readiness checks,
      // after the requests above built the isolate's relay (an accept that woke a waiter kept by
      // the isolate would settle it: a deliverer's nap wakes at 100 items); each item then reaches
      // the upstream once.
      const emails = Array.from({ length: 30 }, (_, i) => `worker-side-by-side-${i}@example.com`);
      const ready = Array.from({ length: 5 }, async () => (await fetch(`${url}/readyz`)).status);
      const statuses = await Promise.all(
        emails.map((email) =>
          collect(
            url,
            Array.from({ length: 5 }, () => email),
          ),
        ),
      );
      expect(statuses.flat()).toEqual(Array(150).fill('accepted'));
      expect(await Promise.all(ready)).toHaveLength(5);
      await expect.poll(() => emails.map((email) => eventsOf(emulator, email).length), { timeout: 30_000, interval: 200 }).toEqual(emails.map(() => 5));
      // A copy would come in the same or an earlier delivery than a last item's: once it arrived, none is left to come.
      const last = 'worker-side-by-side-last@example.com';
      expect(await collectOne(url, last)).toBe('accepted');
      await expect.poll(() => eventsOf(emulator, last).length, { timeout: 30_000, interval: 200 }).toBe(1);
      expect(emails.map((email) => eventsOf(emulator, email).length)).toEqual(emails.map(() => 5));
      expect(dev.output().match(/^.*different request context.*$/m)?.[0]).toBeUndefined();
    }, 90_000);
  });

  it('wrangler deploy --dry-run bundles it', async () => {
    const outdir = join(dir, 'out');
    const deploy = start(node!, [WRANGLER, 'deploy', '--dry-run', '--outdir', outdir, '--config', config, ...vars()], { cwd: dir, env: env() });
    try {
      expect(await deploy.exit, deploy.output()).toBe(0);
    } finally {
      await deploy.stop();
    }
    expect(deploy.output()).toContain('--dry-run: exiting now');
    expect(readdirSync(outdir)).toContain('cloudflare.js');
    expect(deploy.output()).toContain('env.RELAY_STATE (RelayState)');
  }, 120_000);
});
