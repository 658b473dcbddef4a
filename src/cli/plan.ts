/**
 * `cdp-edge plan check | diff | push | types`: the tracking plan file, checked, pushed to the
 * platform (or the relay's proxy, or the emulator) and turned into TypeScript.
 * @module
 */
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { baseUrlFor, isRegion } from '../api/index.js';
import type { Command } from './command.js';
import { createClient, HTTPError } from '../client/index.js';
import { DEFAULT_PLAN_FILE, lockFileOf, readLock, readPlanFile, writeLock } from '../plan/files.js';
import { PlanError, pushPlan, summaryLine, generateTypes, type PushStep } from '../plan/index.js';

const USAGE = `Usage: cdp-edge plan <check | diff | push | types> [options]

  check               validate the plan file; every problem names its path
  diff                show what push would create or modify (nothing is written)
  push                create missing custom fields and activity definitions, modify changed ones
  types --out FILE    write TypeScript that checks track() and identify() against the plan

  --plan FILE         the plan (default ./${DEFAULT_PLAN_FILE})
  --lock FILE         what push sent, per target (default: the plan's name with .lock.json)
  --relay URL         push through a relay's /v1 proxy ...
  --token T           ... with this proxy token (scopes read and write)
  --import-from M     (types) module the generated file imports the snippet's types from (default cdp-edge/browser)
  --site KEY          (types) only the activities and person fields this site of the plan may send

Without --relay, the target is read like the relay reads it: CDP_BASE_URL, or CDP_REGION
(default, au, eu), with the platform key in CDP_API_KEY.
The last line of diff and push: "plan <diff|push>: created N, modified M, unchanged K".`;

const SUBCOMMANDS = ['check', 'diff', 'push', 'types'] as const;
type Subcommand = (typeof SUBCOMMANDS)[number];

const fault = (message: string) => {
  console.error(`cdp-edge plan: ${message}\n\n${USAGE}`);
  return 2;
};

/** The push target: the relay's proxy with a token, or the platform (or emulator) with the key. */
function target(values: { relay?: string | undefined; token?: string | undefined }): { baseUrl: string; apiKey?: string; token?: string } | string {
  if (values.relay !== undefined || values.token !== undefined) {
    if (values.relay === undefined || values.token === undefined) return '--relay URL and --token T go together';
    if (!/^https?:\/\/[^/]+/.test(values.relay)) return `--relay must be an http(s) URL; got ${JSON.stringify(values.relay)}`;
    return { baseUrl: values.relay.replace(/\/+$/, ''), token: values.token };
  }
  const apiKey = process.env['CDP_API_KEY'];
  if (!apiKey) return 'set CDP_API_KEY (with CDP_BASE_URL or CDP_REGION), or give --relay URL --token T';
  const explicit = process.env['CDP_BASE_URL'];
  if (explicit) {
    if (!/^https?:\/\/[^/]+/.test(explicit)) return `CDP_BASE_URL must be an http(s) URL; got ${JSON.stringify(explicit)}`;
    return { baseUrl: explicit.replace(/\/+$/, ''), apiKey };
  }
  const region = process.env['CDP_REGION'] || 'default';
  if (!isRegion(region)) return `CDP_REGION must be default, au or eu; got ${JSON.stringify(region)}`;
  return { baseUrl: baseUrlFor(region), apiKey };
}

const parseOptions = (args: string[]) =>
  parseArgs({
    args,
    allowPositionals: true,
    options: {
      plan: { type: 'string' },
      lock: { type: 'string' },
      relay: { type: 'string' },
      token: { type: 'string' },
      out: { type: 'string' },
      'import-from': { type: 'string' },
      site: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });

const SIGN: Record<PushStep['change'], string> = { created: '+', modified: '~', unchanged: '=' };

const plan: Command = {
  async run(argv) {
    let parsed: ReturnType<typeof parseOptions>;
    try {
      parsed = parseOptions(argv);
    } catch (error) {
      return fault((error as Error).message);
    }
    const { values, positionals } = parsed;
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    const [sub, ...extra] = positionals;
    if (!(SUBCOMMANDS as readonly (string | undefined)[]).includes(sub))
      return fault(`give one of ${SUBCOMMANDS.join(', ')}${sub ? `; got ${JSON.stringify(sub)}` : ''}`);
    if (extra.length > 0) return fault(`unexpected ${JSON.stringify(extra.join(' '))}`);
    const planFile = values.plan ?? DEFAULT_PLAN_FILE;
    try {
      const tracking = readPlanFile(planFile);
      switch (sub as Subcommand) {
        case 'check': {
          const fields = tracking.person_fields?.length ?? 0;
          console.log(
            `plan check: ${planFile} is valid (${tracking.activities.length} activities, ${fields} person fields, ${tracking.sites?.length ?? 0} sites)`,
          );
          return 0;
        }
        case 'types': {
          if (values.out === undefined) return fault('types needs --out FILE (for example src/cdp-edge.plan.ts)');
          const code = generateTypes(tracking, {
            source: planFile.replace(/^.*[\\/]/, ''),
            ...(values['import-from'] ? { importFrom: values['import-from'] } : {}),
            ...(values.site ? { site: values.site } : {}),
          });
          await writeFile(values.out, code);
          console.log(`plan types: wrote ${values.out} (${tracking.activities.length} activities)`);
          return 0;
        }
        default: {
          const where = target(values);
          if (typeof where === 'string') return fault(where);
          const write = sub === 'push';
          const lockFile = values.lock ?? lockFileOf(planFile);
          const lock = await readLock(lockFile);
          const client = createClient({ ...where, retry: { limit: 2, maxTryInSeconds: 30 } });
          const summary = await pushPlan(tracking, {
            client,
            target: where.baseUrl,
            lock,
            write,
            onStep: async (step, current) => {
              const verb = write ? step.change : step.change === 'unchanged' ? 'unchanged' : `would be ${step.change}`;
              console.log(`  ${SIGN[step.change]} ${step.kind} ${step.id}: ${verb}${step.note ? ` (${step.note})` : ''}`);
              if (write && step.kind === 'activity' && step.change !== 'unchanged') await writeLock(lockFile, current);
            },
          });
          console.log(summaryLine(write ? 'push' : 'diff', summary));
          return 0;
        }
      }
    } catch (error) {
      if (error instanceof PlanError || error instanceof RangeError) {
        console.error(`cdp-edge plan: ${error.message}`);
        return 1;
      }
      const message = error instanceof HTTPError ? error.message : (error as Error).message;
      console.error(`cdp-edge plan ${sub}: ${message}`);
      return 1;
    }
  },
};
export default plan;
