/**
 * The plan and its lock file on disk (Node only: the CLI and the demo; the Node relay reads its `RELAY_PLAN` file in src/relay/node/env.ts).
 * @module
 */
import { readFileSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { isRecord } from '../api/index.js';
import { emptyLock, type Lock } from './push.js';
import { PlanError, parsePlan, type Plan } from './schema.js';

export const DEFAULT_PLAN_FILE = 'cdp-edge.plan.json';

/** Reads and checks a plan file; throws PlanError (bad content) or an Error naming the file (unreadable). */
export function readPlanFile(file: string): Plan {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new Error(`cannot read the tracking plan ${file}: ${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message}`, { cause });
  }
  return parsePlan(text, file);
}

/** `shop.plan.json` -> `shop.plan.lock.json`, next to the plan. */
export const lockFileOf = (planFile: string): string =>
  planFile.endsWith('.json') ? `${planFile.slice(0, -'.json'.length)}.lock.json` : `${planFile}.lock.json`;

/** The lock file, or an empty lock when there is none yet. */
export async function readLock(file: string): Promise<Lock> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return emptyLock();
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    throw new PlanError(file, [{ path: '$', message: `the lock file is not valid JSON (${(cause as Error).message}); delete it and push again` }]);
  }
  if (!isRecord(raw) || raw['version'] !== 1 || !isRecord(raw['targets'])) {
    throw new PlanError(file, [{ path: '$', message: 'not a cdp-edge plan lock (version 1); delete it and push again' }]);
  }
  return raw as unknown as Lock;
}

/** Writes the lock whole (temporary file, then rename), so a crash never leaves half a lock. */
export async function writeLock(file: string, lock: Lock): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(lock, null, 2)}\n`);
  await rename(temporary, file);
}
