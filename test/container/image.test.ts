// The container image as shipped (Containerfile), built and run with podman on this machine: no
// registry is reachable, so its Node 22 base is made here (base-image.sh) and passed as the build
// argument users leave at its default. One relay: /healthz, non-root, a /collect delivered once,
// SIGTERM, then a new container on the same volume that forgets no id. Three relays on Redis behind
// the compose file's nginx configuration: one is killed mid-traffic; every item arrives once.
// Not part of `npm test`: `npm run test:container` (.ci/run runs it after).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { RunningEmulator } from '../../src/emulator/index.js';
import { deliveredCount, eventsOf, KEY, ORIGIN, root, SITE_KEY, SITES, upstream } from '../deploy/support.js';
import { startNginx } from '../support/nginx.js';
import { freePort, REDIS_SERVER } from '../support/redis.js';
import { podman } from './podman.js';

const BASE = 'localhost/cdp-edge-node:22';
const IMAGE = 'localhost/cdp-edge-relay:test';
const pod = podman();
let emulator: RunningEmulator;
const secrets = mkdtempSync(join(tmpdir(), 'cdp-container-secrets-'));
const keyFile = join(secrets, 'cdp_api_key');

beforeAll(async () => {
  let started = Date.now();
  await promisify(execFile)('nice', ['-n', '10', join(import.meta.dirname, 'base-image.sh'), BASE], {
    env: { ...pod.env, PODMAN: pod.command },
    timeout: 5 * 60_000,
  });
  console.log(`container: base image ${BASE} made in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  // npm's downloads kept between runs in a cache of the build's own (not the machine's npm cache).
  const cache = process.env['CDP_EDGE_CONTAINER_NPM_CACHE'] ?? join(homedir(), '.cache', 'cdp-edge-container-npm');
  mkdirSync(cache, { recursive: true });
  started = Date.now();
  await pod(
    [
      'build',
      '--isolation',
      'chroot',
      '--format',
      'docker',
      '--layers=false',
      '--build-arg',
      `NODE_IMAGE=${BASE}`,
      '--volume',
      `${cache}:/root/.npm`,
      '--tag',
      IMAGE,
      '--file',
      join(root, 'Containerfile'),
      root,
    ],
    { nice: true, timeoutMs: 20 * 60_000 },
  );
  console.log(`container: ${IMAGE} built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  writeFileSync(keyFile, `${KEY}\n`);
  emulator = await upstream();
}, 30 * 60_000);

afterAll(async () => {
  await emulator?.close();
  await pod.remove();
  rmSync(secrets, { recursive: true, force: true });
}, 120_000);

/** Starts the image in a container on the host's network; returns its address once /healthz answers. */
async function relay(name: string, options: { volume?: string; env?: Record<string, string> } = {}) {
  const port = await freePort();
  const metricsPort = await freePort();
  const env = {
    CDP_API_KEY_FILE: '/run/secrets/cdp_api_key',
    CDP_BASE_URL: emulator.url,
    RELAY_SITES: SITES,
    PORT: String(port),
    RELAY_METRICS_PORT: String(metricsPort),
    ...options.env,
  };
  await pod([
    'run',
    '--detach',
    '--name',
    name,
    '--network',
    'host',
    '--volume',
    `${keyFile}:/run/secrets/cdp_api_key:ro`,
    ...(options.volume ? ['--volume', `${options.volume}:/var/lib/cdp-edge`] : []),
    ...Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`]),
    IMAGE,
  ]);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    const status = await fetch(`${url}/healthz`).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) break;
    const state = await pod(['inspect', '--format', '{{.State.Status}}', name]);
    if (state !== 'running' || Date.now() > deadline) throw new Error(`${name} is ${state}, /healthz ${status}:\n${await pod(['logs', name])}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return { name, url, metricsUrl: `http://127.0.0.1:${metricsPort}` };
}

/** One track with the given id; the relay's answer for it. */
async function send(url: string, item: { id: string; email: string }): Promise<string> {
  const response = await fetch(`${url}/collect`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'text/plain' },
    body: JSON.stringify({
      key: SITE_KEY,
      batch: [{ id: item.id, type: 'track', ts: new Date().toISOString(), activity_id: 'act:cm:signed-up', person: { 'str::email': item.email } }],
    }),
  });
  if (response.status !== 200) return `http ${response.status}`;
  return ((await response.json()) as { results: { status: string }[] }).results[0]!.status;
}

describe('the image', () => {
  it('adds to its Node base what the README says', async () => {
    const size = async (image: string) => Number(await pod(['image', 'inspect', '--format', '{{.Size}}', image]));
    const added = (await size(IMAGE)) - (await size(BASE));
    console.log(`container: ${IMAGE} is ${((await size(IMAGE)) / 1e6).toFixed(1)} MB, ${(added / 1e6).toFixed(1)} MB over its base`);
    for (const page of ['README.md', 'docs/deploy.md']) {
      const stated = /The image adds (\d+) MB to its Node base/.exec(readFileSync(join(root, page), 'utf8'));
      expect(stated, `${page} states the image size`).not.toBeNull();
      expect(Math.abs(added / 1e6 - Number(stated![1])), page).toBeLessThanOrEqual(3);
    }
  });

  it('runs as uid 1000, answers /healthz and its HEALTHCHECK, delivers a /collect once, and drains on SIGTERM with exit 0', async () => {
    const first = await relay('relay-one', { volume: 'relay-state' });
    const pid = await pod(['inspect', '--format', '{{.State.Pid}}', first.name]);
    expect(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]).toBe('1000');
    await pod(['healthcheck', 'run', first.name]);
    const metrics = await fetch(`${first.metricsUrl}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain('cdp_edge_collect_requests_total');

    const item = { id: crypto.randomUUID(), email: 'container@example.com' };
    expect(await send(first.url, item)).toBe('accepted');
    expect(await deliveredCount(emulator, first.url, item.email)).toBe(1);
    const owner = await pod(['exec', first.name, 'node', '-p', "require('fs').statSync('/var/lib/cdp-edge/relay-state.db').uid"]);
    expect(owner).toBe('1000');

    const stopping = Date.now();
    await pod(['stop', '--time', '30', first.name], { timeoutMs: 60_000 });
    const took = Date.now() - stopping;
    // Exit 0 is the relay's own graceful end; a stop past the grace would be SIGKILL's 137.
    expect(await pod(['inspect', '--format', '{{.State.ExitCode}}', first.name])).toBe('0');
    expect(took).toBeLessThan(30_000);
    console.log(`container: stopped by SIGTERM in ${took} ms`);
    await pod(['rm', first.name]);

    // A new container on the same volume: the id is remembered, the platform still has one event.
    const second = await relay('relay-two', { volume: 'relay-state' });
    expect(await send(second.url, item)).toBe('duplicate');
    expect(await deliveredCount(emulator, second.url, item.email)).toBe(1);
    await pod(['stop', '--time', '30', second.name], { timeoutMs: 60_000 });
  }, 180_000);

  it('refuses to start on a missing secret file, naming the variable', async () => {
    await pod([
      'run',
      '--name',
      'relay-no-key',
      '--network',
      'host',
      '--env',
      'CDP_API_KEY_FILE=/run/secrets/absent',
      '--env',
      `RELAY_SITES=${SITES}`,
      IMAGE,
    ]).then(
      () => expect.fail('the relay started without its key'),
      (error: Error) => expect(error.message).toMatch(/CDP_API_KEY_FILE: cannot read \/run\/secrets\/absent: ENOENT/),
    );
    expect(await pod(['inspect', '--format', '{{.State.ExitCode}}', 'relay-no-key'])).toBe('2');
  }, 60_000);
});

interface Compose {
  'x-relay': { environment: Record<string, string>; stop_grace_period: string };
  services: { redis: { command: string[] }; proxy: { networks: { default: { ipv4_address: string } } } };
}

describe('three relays on Redis behind nginx, as deploy/compose/ runs them', () => {
  const dir = join(root, 'deploy', 'compose');
  const compose = parse(readFileSync(join(dir, 'compose.yaml'), 'utf8')) as Compose;
  let redis: ChildProcess | undefined;
  const redisDir = mkdtempSync(join(tmpdir(), 'cdp-compose-redis-'));
  afterAll(async () => {
    if (redis && redis.exitCode === null) {
      const exited = new Promise((resolve) => redis!.once('exit', resolve));
      redis.kill('SIGTERM');
      await exited;
    }
    rmSync(redisDir, { recursive: true, force: true });
  });

  it('lose nothing and send nothing twice when one relay is killed mid-traffic', async () => {
    // Redis with the compose file's own command line (the relays refuse one that could lose items).
    const [program, ...settings] = compose.services.redis.command;
    expect(program).toBe('redis-server');
    const redisPort = await freePort();
    redis = spawn(REDIS_SERVER, [...settings, '--port', String(redisPort), '--bind', '127.0.0.1', '--dir', redisDir], {
      stdio: 'ignore',
    });

    // The relays trust exactly the proxy's fixed address; here nginx runs on the host, at 127.0.0.1.
    const environment = compose['x-relay'].environment;
    expect(environment['RELAY_TRUST_PROXY']).toBe(compose.services.proxy.networks.default.ipv4_address);
    expect(environment['RELAY_REDIS_URL']).toBe('redis://redis:6379');
    const env = {
      ...Object.fromEntries(Object.entries(environment).filter(([, value]) => !value.includes('${'))),
      RELAY_REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      RELAY_TRUST_PROXY: '127.0.0.1',
      // Shortened, as every test does: a killed relay's leased entries come back after 3.5 s, not 30.
      RELAY_DELIVERY_LEASE_MS: '3500',
      RELAY_DELIVERY_LEAD_MS: '1000',
    };
    const relays: Awaited<ReturnType<typeof relay>>[] = [];
    for (const n of [1, 2, 3]) relays.push(await relay(`relay-${n}`, { env }));

    // nginx with the compose file's configuration, its upstreams pointed at the three containers.
    const port = await freePort();
    let conf = readFileSync(join(dir, 'nginx.conf'), 'utf8').replace('listen 80;', `listen 127.0.0.1:${port};`);
    relays.forEach((started, i) => {
      conf = conf.replace(`relay-${i + 1}:8787`, started.url.replace('http://', ''));
    });
    expect(conf).not.toMatch(/relay-\d:8787/);
    const proxy = await startNginx(conf, port);
    const url = `http://127.0.0.1:${port}`;
    try {
      // Visitors send one item each, as the snippet does: again after a failure or a `retry`, until
      // answered accepted or duplicate. A third of the way in, the relay that leads delivery (the
      // one whose deliverer has delivered) is killed: a standby must take the lead, and the
      // entries it had leased come back when their lease ends.
      const items = Array.from({ length: 150 }, (_, i) => ({ id: crypto.randomUUID(), email: `compose-${i}@example.com` }));
      let answered = 0;
      let killed: Promise<string> | undefined;
      let victim = '';
      const delivered = async (started: { metricsUrl: string }) => {
        const text = await (await fetch(`${started.metricsUrl}/metrics`)).text();
        return [...text.matchAll(/^cdp_edge_delivered_entries_total\{[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
      };
      const killLeader = async () => {
        // The leader is known once its deliverer has delivered (its first call may still be on its way).
        const deadline = Date.now() + 20_000;
        let counts = await Promise.all(relays.map(delivered));
        while (Math.max(...counts) === 0 && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          counts = await Promise.all(relays.map(delivered));
        }
        expect(Math.max(...counts), 'a relay has delivered within 20 s').toBeGreaterThan(0);
        victim = relays[counts.indexOf(Math.max(...counts))]!.name;
        return pod(['kill', '--signal', 'KILL', victim]);
      };
      const deliver = async (item: { id: string; email: string }) => {
        for (let attempt = 0; ; attempt++) {
          const status = await send(url, item).catch((error: Error) => error.message);
          if (status === 'accepted' || status === 'duplicate') break;
          if (attempt > 40) throw new Error(`${item.id} never accepted: ${status}`);
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
        if (++answered === 50) {
          killed = killLeader();
          // Awaited once every item is answered; until then its failure is held, not unhandled.
          killed.catch(() => {});
        }
      };
      const queue = [...items];
      await Promise.all(
        Array.from({ length: 5 }, async () => {
          for (let item = queue.shift(); item; item = queue.shift()) await deliver(item);
        }),
      );
      await killed;
      expect(await pod(['inspect', '--format', '{{.State.Status}}', victim])).not.toBe('running');
      // It had taken requests through nginx before it died (a JSON line per request).
      expect((await pod(['logs', victim])).match(/"kind":"collect"/g)?.length ?? 0).toBeGreaterThan(0);
      console.log(`container: killed ${victim}, the delivery leader, once 50 of ${items.length} items were answered`);

      await expect.poll(() => items.filter((item) => eventsOf(emulator, item.email).length === 0).length, { timeout: 90_000, interval: 500 }).toBe(0);
      // A last item through the proxy, delivered after everything before it: a late second copy has had its chance.
      await deliveredCount(emulator, url, items[0]!.email);
      const counts = items.map((item) => eventsOf(emulator, item.email).length);
      expect(counts.filter((count) => count !== 1)).toEqual([]);
    } finally {
      await proxy.close();
      for (const started of relays) await pod(['rm', '--force', '--time', '0', started.name]).catch(() => '');
    }
  }, 300_000);
});
