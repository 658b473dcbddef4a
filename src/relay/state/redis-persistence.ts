/**
 * What a Redis holding the outbox must keep: every accepted item and remembered id across a
 * restart, and under memory pressure. Checked when a relay starts on Redis (state/node.ts): it
 * refuses to start when a setting can lose what it answered `accepted`, naming the setting, unless
 * `RELAY_REDIS_UNSAFE=on` says the operator accepts that (or checked the settings by other means,
 * on a managed Redis that refuses `CONFIG`).
 * @module
 */
import type { Redis } from 'ioredis';

/** The settings, the value each must have, and what another value loses. */
export const REDIS_PERSISTENCE = [
  { name: 'appendonly', needs: 'yes', loses: 'a restart of Redis loses every accepted item and remembered id' },
  { name: 'appendfsync', needs: 'always', loses: 'a crash of Redis may lose the items accepted in its last second' },
  { name: 'maxmemory-policy', needs: 'noeviction', loses: 'under memory pressure Redis drops accepted items or remembered ids' },
] as const;

/** The variable that lets a relay start on a Redis whose settings can lose accepted items. */
export const REDIS_UNSAFE = 'RELAY_REDIS_UNSAFE';

/**
 * What is wrong with `redis`'s persistence, one sentence per setting; empty when all is well.
 * A Redis that refuses `CONFIG GET` (managed services often do) answers one sentence saying so.
 */
export async function redisPersistenceProblems(redis: Redis): Promise<string[]> {
  const problems: string[] = [];
  for (const { name, needs, loses } of REDIS_PERSISTENCE) {
    let value: string | undefined;
    try {
      value = ((await redis.config('GET', name)) as string[])[1];
    } catch (error) {
      return [
        `CONFIG GET ${name} was refused (${(error as Error).message}): check appendonly yes, appendfsync always and maxmemory-policy noeviction yourself`,
      ];
    }
    if (value !== needs) problems.push(`${name} is ${JSON.stringify(value ?? '')}, needs ${JSON.stringify(needs)}: ${loses}`);
  }
  return problems;
}

/**
 * Throws naming every wrong setting, unless `unsafe`; with `unsafe`, tells `warn` instead.
 * `host` names the server (never its password).
 */
export async function checkRedisPersistence(redis: Redis, host: string, unsafe: boolean, warn: (message: string) => void): Promise<void> {
  const problems = await redisPersistenceProblems(redis);
  if (problems.length === 0) return;
  const list = problems.join('; ');
  if (unsafe) warn(`Redis ${host} may lose accepted items (${REDIS_UNSAFE}=on): ${list}`);
  else
    throw new Error(
      `Redis ${host} can lose accepted items, so the relay does not start: ${list}. Fix the settings (docs/scaling.md), or set ${REDIS_UNSAFE}=on to start anyway.`,
    );
}
