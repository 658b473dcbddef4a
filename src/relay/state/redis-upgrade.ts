/**
 * Upgrading a Redis from the release before accept-then-deliver: it remembered a forwarded id as
 * `i:<site>:<id as sent>` = `f`, expiring (`PXAT`) at the end of its window, which nothing reads
 * any more. Connecting the outbox moves each such id into the outbox's memory (`d:<site n>:<16
 * bytes>`, the same expiry, counted in the gauge) and deletes the old key; leases (`l`) are
 * deleted. One SCAN of the old keys, once: `o:meta` `upgraded` says it was done, so later starts
 * cost nothing. Stop the previous release's relays before starting this one: ids they remember
 * after the scan are not moved.
 *
 * Upgrading from the release before browsers were indexed (identify before track as a rule of the
 * lease): each entry gets its browser (`o:mb` for a merge, `o:ab` for an activity), and each merge
 * still waiting joins `o:mq:<browser>`, once, a page of `o:items` per script (`o:meta` `browsers`).
 *
 * Upgrading from the release before entries had places (lease by readiness): each waiting entry
 * not leased or released is placed, ready or held behind a merge of its browser, once, a page of
 * `o:lane` per script (`o:meta` `places`); those in `o:wait` are placed as they come due.
 * @module
 */
import { Buffer } from 'node:buffer';
import type { Redis } from 'ioredis';
import { compactId } from './ids.js';
import { COMMON } from './redis-outbox-entries.js';

/** ARGV: prefix, then per old key: the key, its site, the 16-byte id. Returns how many ids it moved. */
const UPGRADE = `
local P = ARGV[1]
local moved = 0
for i = 2, #ARGV, 3 do
  local old, site = ARGV[i], ARGV[i + 1]
  local untilMs = redis.call('PEXPIRETIME', old)
  if redis.call('GET', old) == 'f' and untilMs > 0 then
    local n = redis.call('HGET', P..'o:sites', site)
    if not n then
      n = redis.call('HINCRBY', P..'o:meta', 'sites', 1)
      redis.call('HSET', P..'o:sites', site, n)
    end
    local key = P..'d:'..n..':'..ARGV[i + 2]
    local had = redis.call('PEXPIRETIME', key)
    if had < untilMs then
      redis.call('SET', key, 1, 'PXAT', untilMs)
      if had < 0 then
        local bucket = math.ceil(untilMs / 1000)
        redis.call('ZADD', P..'o:n', bucket, bucket)
        redis.call('HINCRBY', P..'o:nc', bucket, 1)
        redis.call('HINCRBY', P..'o:meta', 'remembered', 1)
        moved = moved + 1
      end
    end
  end
  redis.call('DEL', old)
end
return moved`;

/** Moves the previous release's remembered ids under `prefix` into the outbox, once; resolves to how many. */
export async function importPreviousIds(redis: Redis, prefix: string): Promise<number> {
  if ((await redis.hget(`${prefix}o:meta`, 'upgraded')) === '1') return 0;
  redis.defineCommand('cdpOutboxUpgrade', { lua: UPGRADE, numberOfKeys: 0 });
  const run = (...args: (string | Buffer)[]): Promise<number> => (redis as unknown as { cdpOutboxUpgrade: typeof run }).cdpOutboxUpgrade(...args);
  const start = `${prefix}i:`;
  let moved = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${start}*`, 'COUNT', 1000);
    cursor = next;
    const args = keys.flatMap((key) => {
      const rest = key.slice(start.length);
      const colon = rest.indexOf(':'); // site keys have no colon (config.ts); ids may
      return colon < 0 ? [] : [key, rest.slice(0, colon), Buffer.from(compactId(rest.slice(colon + 1)))];
    });
    if (args.length > 0) moved += Number(await run(prefix, ...args));
  } while (cursor !== '0');
  await redis.hset(`${prefix}o:meta`, 'upgraded', '1');
  return moved;
}

/** ARGV: prefix, then per entry: its seq and item JSON. Indexes each entry's browser; returns how many it indexed. */
const INDEX_BROWSERS = `
local P = ARGV[1]
local indexed = 0
for i = 2, #ARGV, 2 do
  local seq = ARGV[i]
  local ok, item = pcall(cjson.decode, ARGV[i + 1])
  local n = ok and type(item) == 'table' and redis.call('HGET', P..'o:sites', tostring(item.site))
  if n and not redis.call('HGET', P..'o:mb', seq) and not redis.call('HGET', P..'o:ab', seq) then
    local browser = n..':'..tostring(item.browser)
    if item.kind == 'activity' then
      redis.call('HSET', P..'o:ab', seq, browser)
    else
      redis.call('HSET', P..'o:mb', seq, browser)
      if not redis.call('ZSCORE', P..'o:dead', seq) then redis.call('ZADD', P..'o:mq:'..browser, seq, seq) end
    end
    indexed = indexed + 1
  end
end
return indexed`;

/** ARGV: prefix, then per entry: its seq and lane. Places each waiting entry not leased or released (they are placed as they come due). */
const PLACE = `${COMMON}
local placed = 0
for i = 2, #ARGV, 2 do
  local seq, lane = ARGV[i], ARGV[i + 1]
  if redis.call('ZSCORE', P..'o:q:'..lane, seq) and not redis.call('ZSCORE', P..'o:wait', seq) and not redis.call('ZSCORE', P..'o:r:'..lane, seq) then
    place(seq, lane)
    placed = placed + 1
  end
end
return placed`;

/** Runs `lua` over the hash `hash` a page of fields and values at a time, once (`o:meta` `flag` says it was done); resolves to what its pages counted. */
async function overPages(redis: Redis, prefix: string, flag: string, lua: string, hash: string): Promise<number> {
  if ((await redis.hget(`${prefix}o:meta`, flag)) === '1') return 0;
  const name = `cdpOutboxUpgrade_${flag}`;
  redis.defineCommand(name, { lua, numberOfKeys: 0 });
  const run = (...args: string[]): Promise<number> => (redis as unknown as Record<string, typeof run>)[name]!(...args);
  let counted = 0;
  let cursor = '0';
  do {
    const [next, page] = await redis.hscan(`${prefix}${hash}`, cursor, 'COUNT', 500);
    cursor = next;
    if (page.length > 0) counted += Number(await run(prefix, ...page));
  } while (cursor !== '0');
  await redis.hset(`${prefix}o:meta`, flag, '1');
  return counted;
}

/** Indexes the browsers of the entries a release before the index stored under `prefix`, once; resolves to how many. */
export const indexPreviousBrowsers = (redis: Redis, prefix: string): Promise<number> => overPages(redis, prefix, 'browsers', INDEX_BROWSERS, 'o:items');

/** Places the entries a release before the places stored under `prefix` (ready, or held behind a merge), once; resolves to how many. */
export const placePreviousEntries = (redis: Redis, prefix: string): Promise<number> => overPages(redis, prefix, 'places', PLACE, 'o:lane');
