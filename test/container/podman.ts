/**
 * Podman as these machines run it (Debian's podman and runc, as root): a containers.conf with no
 * default ulimits (the default nofile and nproc limits cannot be raised here), vfs storage and
 * runc (crun refuses the hybrid cgroups), cgroupfs, the host's network. Storage lives in a folder
 * of its own that `remove()` deletes, so a run leaves no image behind.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Podman {
  /** the global flags, for scripts that call podman themselves (test/container/base-image.sh) */
  command: string;
  env: NodeJS.ProcessEnv;
  /** runs `podman <args>`; rejects with its output when it fails */
  (args: string[], options?: { nice?: boolean; timeoutMs?: number }): Promise<string>;
  /** deletes every container, image and volume it made, and its storage */
  remove(): Promise<void>;
}

export function podman(): Podman {
  const dir = mkdtempSync(join(process.env['CDP_EDGE_PODMAN_DIR'] ?? tmpdir(), 'cdp-podman-'));
  const conf = join(dir, 'containers.conf');
  writeFileSync(conf, '[containers]\ndefault_ulimits = []\n');
  const flags = ['--storage-driver', 'vfs', '--runtime', 'runc', '--cgroup-manager', 'cgroupfs', '--root', join(dir, 'storage'), '--runroot', join(dir, 'run')];
  const env = { ...process.env, CONTAINERS_CONF: conf };
  const call = async (args: string[], options: { nice?: boolean; timeoutMs?: number } = {}) => {
    // Image builds share two cores with everything else: nice 10, as every heavy step here.
    const [file, argv] = options.nice ? ['nice', ['-n', '10', 'podman', ...flags, ...args]] : ['podman', [...flags, ...args]];
    try {
      const { stdout } = await run(file, argv, { env, maxBuffer: 64 * 1024 * 1024, timeout: options.timeoutMs ?? 120_000 });
      return stdout.trim();
    } catch (error) {
      const failed = error as Error & { stdout?: string; stderr?: string };
      throw new Error(`podman ${args.join(' ')} failed: ${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
    }
  };
  return Object.assign(call, {
    command: ['podman', ...flags].join(' '),
    env,
    async remove() {
      await call(['rm', '--all', '--force', '--time', '0']).catch(() => '');
      await call(['volume', 'prune', '--force']).catch(() => '');
      await call(['rmi', '--all', '--force']).catch(() => '');
      rmSync(dir, { recursive: true, force: true });
    },
  });
}
