// The Kubernetes manifests (deploy/kubernetes/, a kustomize base), checked without a cluster. What
// is checked, and what is not:
// - every object the kustomization lists is valid against the Kubernetes API's OpenAPI schema, as
//   the npm package kubernetes-models compiles it (types, required fields, enums, formats); that
//   schema lets unknown fields through, as the API server does without strict field validation,
//   so a misspelt field name passes it;
// - hence the fields the relay depends on are read at their exact paths and checked against the
//   relay and the image: probes, ports, the grace period against the drain, resources, the
//   non-root user against the Containerfile's USER, secrets as files from the Secret, Redis for
//   more than one replica, with the settings the relay requires (the same as the compose file's).
// Not checked: kustomize's own build and a cluster's admission (no kubectl or cluster here).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Secret, Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseConfig } from '../../src/relay/core/config.js';
import { SECRET_VARIABLES } from '../../src/relay/node/env.js';
import { root } from './support.js';

const dir = join(root, 'deploy', 'kubernetes');
const MODELS = {
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};

const kustomization = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as { resources: string[] };
const objects: Manifest[] = kustomization.resources.flatMap((file) =>
  parseAllDocuments(readFileSync(join(dir, file), 'utf8')).map((document) => {
    if (document.errors.length > 0) throw new Error(`${file}: ${document.errors[0]!.message}`);
    return document.toJS() as Manifest;
  }),
);
const find = (kind: string, name: string) => {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found;
};

describe('deploy/kubernetes', () => {
  it('has only objects valid against the Kubernetes API schema', () => {
    expect(objects.map((object) => `${object.kind}/${object.metadata.name}`).sort()).toEqual(
      [
        'ConfigMap/cdp-edge-relay',
        'Deployment/cdp-edge-relay',
        'PodDisruptionBudget/cdp-edge-relay',
        'Secret/cdp-edge-relay',
        'Service/cdp-edge-redis',
        'Service/cdp-edge-relay',
        'Service/cdp-edge-relay-metrics',
        'StatefulSet/cdp-edge-redis',
      ].sort(),
    );
    for (const object of objects) {
      const Model = MODELS[`${object.apiVersion}/${object.kind}` as keyof typeof MODELS];
      expect(Model, `${object.apiVersion} ${object.kind}`).toBeDefined();
      expect(() => new Model(object as never).validate(), `${object.kind}/${object.metadata.name}`).not.toThrow();
    }
  });

  it('catches a wrong type or a missing field (the schema check can fail)', () => {
    const deployment = structuredClone(find('Deployment', 'cdp-edge-relay'));
    deployment.spec.replicas = 'three';
    expect(() => new Deployment(deployment as never).validate()).toThrow(/replicas must be integer/);
    const probeless = structuredClone(find('Deployment', 'cdp-edge-relay'));
    delete probeless.spec.template.spec.containers[0].readinessProbe.httpGet.port;
    expect(() => new Deployment(probeless as never).validate()).toThrow(/readinessProbe\/httpGet must have required property port/);
  });

  const deployment = find('Deployment', 'cdp-edge-relay');
  const pod = deployment.spec.template.spec;
  const relay = pod.containers[0];
  const env = Object.fromEntries(relay.env.map((entry: { name: string; value: string }) => [entry.name, entry.value]));
  const portOf = (name: string) => relay.ports.find((port: { name: string }) => port.name === name)?.containerPort;

  it('probes /readyz and /healthz on the relay port, which both Services reach by name', () => {
    expect(relay.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(relay.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    // The image's ports (Containerfile ENV PORT and RELAY_METRICS_PORT).
    const containerfile = readFileSync(join(root, 'Containerfile'), 'utf8');
    expect(portOf('http')).toBe(Number(/PORT=(\d+)/.exec(containerfile)?.[1]));
    expect(portOf('metrics')).toBe(Number(/RELAY_METRICS_PORT=(\d+)/.exec(containerfile)?.[1]));
    expect(find('Service', 'cdp-edge-relay').spec.ports[0].targetPort).toBe('http');
    expect(find('Service', 'cdp-edge-relay-metrics').spec.ports[0].targetPort).toBe('metrics');
    for (const service of ['cdp-edge-relay', 'cdp-edge-relay-metrics'])
      expect(find('Service', service).spec.selector).toEqual(deployment.spec.template.metadata.labels);
  });

  it('lets a relay drain before it is killed, and bounds what it uses', () => {
    const { budgetMs } = parseConfig({ CDP_API_KEY: 'k' });
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(budgetMs + 1_000 + budgetMs);
    expect(relay.resources.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    expect(relay.resources.limits).toMatchObject({ memory: expect.any(String) });
  });

  it('runs as the image user, non-root, with nothing to escalate', () => {
    const user = /^USER (\d+):(\d+)$/m.exec(readFileSync(join(root, 'Containerfile'), 'utf8'));
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: Number(user?.[1]), runAsGroup: Number(user?.[2]) });
    expect(relay.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
  });

  it('reads its secrets as files from the Secret, by the variables the relay knows', () => {
    const secret = find('Secret', 'cdp-edge-relay');
    const mount = relay.volumeMounts.find((volumeMount: { name: string }) => volumeMount.name === 'secrets');
    expect(pod.volumes.find((volume: { name: string }) => volume.name === 'secrets').secret.secretName).toBe(secret.metadata.name);
    const files = Object.entries(env).filter(([name]) => name.endsWith('_FILE'));
    expect(files.map(([name]) => name).sort()).toEqual(['CDP_API_KEY_FILE', 'RELAY_REDIS_URL_FILE']);
    for (const [name, path] of files) {
      expect(SECRET_VARIABLES).toContain(name.replace(/_FILE$/, ''));
      expect(path).toMatch(new RegExp(`^${mount.mountPath}/`));
      expect(Object.keys(secret.stringData ?? {})).toContain((path as string).slice(mount.mountPath.length + 1));
    }
    // Nothing secret in the ConfigMap.
    const config = find('ConfigMap', 'cdp-edge-relay');
    for (const name of SECRET_VARIABLES) expect(config.data?.[name]).toBeUndefined();
    expect(() => parseConfig({ CDP_API_KEY: 'k', ...config.data })).not.toThrow();
  });

  it('puts more than one replica on Redis, set as the relay requires and as the compose file has it', () => {
    expect(deployment.spec.replicas).toBeGreaterThan(1);
    expect(env['RELAY_REDIS_URL_FILE']).toBeDefined();
    const secret = find('Secret', 'cdp-edge-relay');
    const redisService = find('Service', 'cdp-edge-redis');
    expect(secret.stringData?.['redis_url']).toBe(`redis://${redisService.metadata.name}:${redisService.spec.ports[0].port}`);
    const redis = find('StatefulSet', 'cdp-edge-redis').spec;
    const compose = parse(readFileSync(join(root, 'deploy', 'compose', 'compose.yaml'), 'utf8')) as { services: { redis: { command: string[] } } };
    expect(redis.template.spec.containers[0].command).toEqual(compose.services.redis.command);
    expect(compose.services.redis.command.join(' ')).toMatch(/--appendonly yes --appendfsync always --maxmemory-policy noeviction/);
    expect(redis.volumeClaimTemplates[0].metadata.name).toBe(redis.template.spec.containers[0].volumeMounts[0].name);
    expect(find('PodDisruptionBudget', 'cdp-edge-relay').spec.minAvailable).toBeLessThan(deployment.spec.replicas);
  });
});
