// The Containerfile and the compose file read as text, in `npm test` (building and running them
// takes minutes: `npm run test:container` does that). What users rely on without reading them:
// the base is a build argument defaulting to the public Node 22 image, a numeric non-root user, the
// state on a volume, a health check, SIGTERM, both ports; compose mounts the key where
// CDP_API_KEY_FILE points, gives each relay the drain time, and Redis the settings the relay needs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../src/relay/core/config.js';
import { root } from './support.js';

const containerfile = readFileSync(join(root, 'Containerfile'), 'utf8');
const instructions = (name: string) => [...containerfile.matchAll(new RegExp(`^${name} (.*)$`, 'gm'))].map((match) => match[1]!);
/** The `ENV` instruction's variables (one instruction, continued over lines). */
const env = Object.fromEntries(
  /^ENV ((?:.*\\\n)*.*)$/m
    .exec(containerfile)![1]!
    .replace(/\\\n/g, ' ')
    .trim()
    .split(/\s+/)
    .map((pair) => pair.split('=') as [string, string]),
);

describe('Containerfile', () => {
  it('builds both stages on NODE_IMAGE, by default the public Node 22 image', () => {
    expect(instructions('ARG')).toEqual([expect.stringMatching(/^NODE_IMAGE=docker\.io\/library\/node:22[-\w.]*$/)]);
    const base = ['$', '{NODE_IMAGE}'].join('');
    expect(instructions('FROM')).toEqual([`${base} AS build`, base]);
  });

  it('runs the relay as uid 1000 with its state file on the volume, SIGTERM, a health check and both ports', () => {
    expect(instructions('USER')).toEqual(['1000:1000']);
    expect(instructions('VOLUME')).toEqual(['["/var/lib/cdp-edge"]']);
    expect(env['RELAY_STATE_FILE']).toMatch(/^\/var\/lib\/cdp-edge\/[^/]+\.db$/);
    expect(instructions('STOPSIGNAL')).toEqual(['SIGTERM']);
    expect(instructions('EXPOSE')).toEqual([`${env['PORT']} ${env['RELAY_METRICS_PORT']}`]);
    expect(env['RELAY_METRICS_HOST']).toBe('0.0.0.0');
    expect(containerfile).toMatch(/^HEALTHCHECK [^\n]*\\\n\s+CMD \["node", "-e", "fetch\('http:\/\/127\.0\.0\.1:' \+ \(process\.env\.PORT/m);
    expect(instructions('ENTRYPOINT')).toEqual(['["node", "/app/bin/cdp-edge.js", "relay", "--host", "0.0.0.0"]']);
    // Production dependencies only in the image.
    expect(containerfile).toMatch(/npm prune --omit=dev/);
  });
});

describe('deploy/compose/compose.yaml', () => {
  const compose = parse(readFileSync(join(root, 'deploy', 'compose', 'compose.yaml'), 'utf8')) as {
    'x-relay': { environment: Record<string, string>; secrets: string[]; stop_grace_period: string; build: { dockerfile: string } };
    services: Record<string, { command?: string[] }>;
  };
  const relay = compose['x-relay'];

  it('runs three relays of the Containerfile on Redis, with the key where CDP_API_KEY_FILE points', () => {
    expect(Object.keys(compose.services).filter((name) => name.startsWith('relay-'))).toEqual(['relay-1', 'relay-2', 'relay-3']);
    expect(relay.build.dockerfile).toBe('Containerfile');
    expect(relay.environment['CDP_API_KEY_FILE']).toBe(`/run/secrets/${relay.secrets[0]}`);
    expect(relay.environment['RELAY_REDIS_URL']).toMatch(/^redis:\/\/redis:6379$/);
    expect(compose.services['redis']!.command!.join(' ')).toMatch(/--appendonly yes --appendfsync always --maxmemory-policy noeviction/);
  });

  it('gives each relay more than its drain before a kill', () => {
    const { budgetMs } = parseConfig({ CDP_API_KEY: 'k' });
    expect(Number(/^(\d+)s$/.exec(relay.stop_grace_period)?.[1]) * 1000).toBeGreaterThan(budgetMs + 1_000 + budgetMs);
  });
});
