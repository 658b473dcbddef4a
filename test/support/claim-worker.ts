// One process of the cross-process claim test: claims the same ids as its siblings through its
// own connection to the shared SQLite file or Redis, and prints the ids it got as fresh.
import { createRedisState } from '../../src/relay/state/redis.js';
import { createSqliteStore } from '../../src/relay/state/sqlite.js';

const [kind, where, count] = process.argv.slice(2) as [string, string, string];
const store = kind === 'redis' ? (await createRedisState(where)).store : await createSqliteStore(where);
const ids = Array.from({ length: Number(count) }, (_, i) => `id-${i}`);
const fresh: string[] = [];
// Ten ids per claim, as a browser batch: every id is contested by every process.
for (let i = 0; i < ids.length; i += 10) fresh.push(...(await store.claim({ site: 'race' }, ids.slice(i, i + 10), Date.now(), 60_000)).fresh);
process.stdout.write(JSON.stringify(fresh));
await store.close();
