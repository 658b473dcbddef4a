// `cdp-edge emulator --tracking-plan FILE` from the built package: it starts holding the plan's
// custom fields and activity definitions, so `plan push` against it then has nothing to do.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { ensureBuilt, root } from '../support/built.js';

const bin = join(root, 'bin', 'cdp-edge.js');
const plan = join(root, 'demo', 'cdp-edge.plan.json');

beforeAll(ensureBuilt, 180_000);

/** Runs the CLI until `until` matches its output (or it exits); resolves with the output and a stop function. */
function cli(args: string[], until: RegExp): Promise<{ out: string; code: number | null; stop(): Promise<number | null> }> {
  const child = spawn(process.execPath, [bin, ...args], { cwd: root, env: { PATH: process.env['PATH'] ?? '' } });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out:\n${out}`)), 30_000);
    const done = (code: number | null) => {
      clearTimeout(timer);
      resolve({
        out,
        code,
        stop: async () => {
          child.kill('SIGTERM');
          return exit;
        },
      });
    };
    const read = (chunk: Buffer) => {
      out += chunk;
      if (until.test(out)) done(null);
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.once('exit', (code) => done(code));
  });
}

describe('cdp-edge emulator --tracking-plan', () => {
  it("starts with the plan's definitions and fields", async () => {
    const run = await cli(['emulator', '--port', '0', '--key', 'tp-key', '--tracking-plan', plan], /listening on (http:\/\/\S+)/);
    try {
      expect(run.out).toContain(`tracking plan ${plan}: 4 created, 0 adopted`);
      const url = /listening on (http:\/\/\S+)/.exec(run.out)![1]!;
      const client = createClient({ apiKey: 'tp-key', baseUrl: url, retry: false });
      const fields = await client.person.getCustomFields();
      expect(fields.fields.map((f) => f.field.id)).toEqual(['str:cm:favourite-tea']);
      // the definitions exist: creating one again is refused as a duplicate
      await expect(client.definitions.createActivity({ name: 'signed-up' })).rejects.toMatchObject({ status: 409 });
      const dashboard = await (await fetch(`${url}/`)).text();
      for (const id of ['act:cm:page-view', 'act:cm:added-to-cart', 'act:cm:signed-up']) expect(dashboard).toContain(id);
    } finally {
      expect(await run.stop()).toBe(0);
    }
  });

  it('refuses a plan file that is not valid, naming the path, before listening', async () => {
    const run = await cli(['emulator', '--port', '0', '--tracking-plan', join(root, 'package.json')], /$^/);
    expect(run.code).toBe(2);
    expect(run.out).toMatch(/package\.json is not a valid tracking plan:\n[\s\S]*\n {2}activities: must be an array of activity definitions\n/);
    expect(run.out).not.toContain('listening');
  });
});
