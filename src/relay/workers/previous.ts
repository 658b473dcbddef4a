/**
 * Upgrading a deployed Worker keeps its memory of ids. The release before the outbox objects
 * remembered the ids it delivered in its `RelayState` objects: without a queue, in the shard of the
 * id as sent (`<site>#n`, table `ids`, until `forwarded_until`); with a queue, in the consumer's
 * ledger (`delivered:<site>#n`, table `delivered`, 16-byte ids, delivered or dead-lettered until
 * `expires`). Nothing writes there any more, and the outbox objects do not hold those ids, so a
 * router meeting an id for the first time asks the old objects whether they still remember it
 * (outbox-object.ts): a remembered id is routed nowhere and answered `duplicate` until the old
 * memory of it ends.
 *
 * The cost is bounded: an old object answers with the last moment it remembers anything (its
 * horizon), each router keeps that per old object, and asks an old object again only while its
 * horizon is ahead. An old object that remembers nothing (a deployment that never ran the previous
 * release) is asked once per router; one that does is asked for new ids until the last of its ids
 * expires, a dedupe window after the upgrade at most.
 *
 * An id the previous release had under a live lease (being forwarded) or had tried to deliver from
 * its queue (`attempts` > 0) may have reached the platform: it is held, not delivered again
 * ({@link doubtedHome}).
 * @module
 */
import type { DurableObjectNamespace } from '@cloudflare/workers-types/index.ts';
import { compactId, compactIdString } from '../state/ids.js';
import type { SqlPort } from '../state/sql-outbox.js';
import { hash, type RelayState, type Remembered, shardName } from './state.js';

/** The home a router gives an id the previous release remembers: no outbox object; the id is a duplicate. */
export const PREVIOUS_HOME = -1;

/**
 * The home a router gives an id the previous release had in doubt (under a live lease, or tried by
 * its queue consumer): its outbox object `home`, marked. That object stores it as sent once
 * (`attempts` 1), so the ambiguous-call policy holds it (an activity: dead letter `ambiguous`, for
 * an operator to retry) instead of delivering it again.
 */
export const doubtedHome = (home: number): number => -2 - home;
/** A router's answer read back: the outbox object, and whether the id was in doubt before the upgrade. */
export const readHome = (routed: number, shards: number): { home: number; doubted: boolean } =>
  routed <= -2 ? { home: (-2 - routed) % shards, doubted: true } : { home: routed === PREVIOUS_HOME ? PREVIOUS_HOME : routed % shards, doubted: false };

/** What a router knows of each old object: until when it may remember an id (its horizon when last asked). */
export const PREVIOUS_SCHEMA = 'CREATE TABLE IF NOT EXISTS outbox_previous (name TEXT PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID;';

/** The previous release's no-queue shard of an id of `site`: by a hash of the id as sent. */
export const previousShard = (site: string, id: string, shards: number): string => shardName(site, hash(id) % shards);
/** The previous release's queue ledger object of an id of `site`: by a hash of its 16 bytes. */
export const previousLedger = (site: string, id: string, shards: number): string => shardName(`delivered:${site}`, hash(compactIdString(id)) % shards);

/** What one old object is asked: indexes into the items, with the id as sent and as 16 bytes. */
interface Question {
  texts: [number, string][];
  blobs: [number, ArrayBuffer][];
}

/**
 * Until when the previous release remembers each of `items` (`[site, id]`; 0 or less: it does
 * not) and whether it had each in doubt, asking, in parallel, only the old objects whose horizon
 * (as `port` keeps it) is ahead of `now`.
 */
export async function rememberedBefore(
  namespace: DurableObjectNamespace<RelayState>,
  port: SqlPort,
  items: readonly [string, string][],
  shards: number,
  now: number,
): Promise<{ until: number[]; doubted: boolean[] }> {
  port.exec(PREVIOUS_SCHEMA);
  const questions = new Map<string, Question>();
  const question = (name: string) => {
    const asked = questions.get(name) ?? { texts: [], blobs: [] };
    questions.set(name, asked);
    return asked;
  };
  for (const [index, [site, id]] of items.entries()) {
    question(previousShard(site, id, shards)).texts.push([index, id]);
    question(previousLedger(site, id, shards)).blobs.push([index, compactId(id).slice().buffer]);
  }
  const until = items.map(() => 0);
  const doubted = items.map(() => false);
  await Promise.all(
    [...questions].map(async ([name, { texts, blobs }]) => {
      const known = port.query('SELECT until FROM outbox_previous WHERE name = ?1', name)[0];
      if (known !== undefined && Number(known[0]) <= now) return;
      const answer = (await namespace.get(namespace.idFromName(name)).remembered(
        texts.map(([, id]) => id),
        blobs.map(([, bytes]) => bytes),
        now,
      )) as Remembered;
      port.run('INSERT INTO outbox_previous (name, until) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET until = excluded.until', name, answer.horizon);
      for (const [i, [index]] of texts.entries()) until[index] = Math.max(until[index]!, answer.texts[i]!);
      for (const [i, [index]] of blobs.entries()) until[index] = Math.max(until[index]!, answer.blobs[i]!);
      for (const [i, [index]] of texts.entries()) if (answer.doubted.texts[i]) doubted[index] = true;
      for (const [i, [index]] of blobs.entries()) if (answer.doubted.blobs[i]) doubted[index] = true;
    }),
  );
  return { until, doubted };
}
