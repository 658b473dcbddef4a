/**
 * The Worker's {@link Outbox}: `RELAY_SHARDS` outbox objects ({@link RelayOutbox}), seen as one.
 *
 * Where an item lives: with its browser. A browser's items all go to the object of its hash
 * (`outbox#n`), so its identifies go before its tracks there, across leases and batches, as on
 * Node. Dedupe must hold for an id however it is sent (two tabs, a beacon, a server: two `queue`
 * ids, so two browsers), so a router decides first: the router object of the id's hash
 * (`route#n`) remembers, for the window, which outbox object the id went to first, and a copy of
 * the id sent by another browser goes to that same object, whose own memory answers it
 * `duplicate`. Should the outbox object fail after the router answered, the item is not stored and
 * the browser sends it again, to the same object: a route alone never makes an item a duplicate.
 *
 * Each object delivers its own entries (its alarm), so `lease`, `sending`, `settle` and `lead` of
 * this facade are not for use; the dead-letter methods (`cdp-edge outbox` through the admin
 * endpoints) and `stats` go to every object. A dead letter's `seq` here is the object's own seq
 * times 1024 plus the object's number.
 * @module
 */
import type { DurableObjectNamespace } from '@cloudflare/workers-types/index.ts';
import { compactIdString } from '../state/ids.js';
import { addErased, type Erased, NOTHING_ERASED, type Suppression } from '../state/erase.js';
import type { Accepted, DeadLetter, Outbox, OutboxStats } from '../state/outbox.js';
import type { RelayOutbox } from './outbox-object.js';
import { PREVIOUS_HOME, readHome } from './previous.js';
import { hash } from './state.js';

/** The most objects RELAY_SHARDS may name: a dead letter's seq carries its object's number below it. */
export const MAX_SHARDS = 1024;

export const outboxName = (shard: number): string => `outbox#${shard}`;
export const routerName = (shard: number): string => `route#${shard}`;
/** The object that keeps the suppression list (state/erase.ts): one for the deployment, read by each isolate's cache now and then. */
export const SUPPRESSION_OBJECT = 'suppressions';
/** What a router remembers an id of `site` by: the site and the id's 16 bytes (a UUID in any case is one id). */
export const routeKey = (site: string, id: string): string => `${site}\u0000${compactIdString(id)}`;

function groupBy<T>(list: readonly T[], key: (value: T) => number): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const value of list) {
    const k = key(value);
    const group = groups.get(k);
    if (group) group.push(value);
    else groups.set(k, [value]);
  }
  return groups;
}

const seqOf = (seq: number, shard: number) => seq * MAX_SHARDS + shard;

export function createShardedOutbox(namespace: DurableObjectNamespace<RelayOutbox>, shards: number): Outbox {
  const object = (name: string) => namespace.get(namespace.idFromName(name));
  const all = () => Array.from({ length: shards }, (_, shard) => shard);
  const notHere = (): never => {
    throw new Error('on Workers each outbox object delivers its own entries, from its alarm');
  };
  const bySeqShard = (seqs: readonly number[]) => groupBy(seqs, (seq) => seq % MAX_SHARDS);
  return {
    // Each object holds its own share under `limits` (a visitor's browsers may live in several).
    async accept(items, now, windowMs, limits) {
      // Which object each id goes to: the router's answer (first come within the window), asked per router object in parallel.
      const keyed = items.map((item) => ({ item, key: routeKey(item.site, item.id), home: hash(item.browser) % shards }));
      const homes = new Map<string, number>();
      const doubted = new Set<string>();
      await Promise.all(
        [...groupBy(keyed, ({ key }) => hash(key) % shards)].map(async ([router, part]) => {
          const pairs = part.map(({ key, home }): [string, number] => [key, home]);
          const previous = { items: part.map(({ item }): [string, string] => [item.site, item.id]), shards };
          const answered = (await object(routerName(router)).route(pairs, now, now + windowMs, previous)) as number[];
          for (const [i, { key }] of part.entries()) {
            const { home, doubted: inDoubt } = readHome(answered[i]!, shards);
            homes.set(key, home);
            if (inDoubt) doubted.add(key);
          }
        }),
      );
      const answers = await Promise.all(
        // An id the previous release remembers goes nowhere: it is a duplicate (previous.ts).
        [...groupBy(keyed, ({ key }) => homes.get(key)!)]
          .filter(([home]) => home !== PREVIOUS_HOME)
          .map(
            ([home, part]) =>
              object(outboxName(home)).acceptToDeliver(
                part.map(({ item }) => item),
                now,
                windowMs,
                limits,
                part.filter(({ key }) => doubted.has(key)).map(({ item }) => item.id),
              ) as Promise<Accepted>,
          ),
      );
      const accepted = new Set(answers.flatMap((answer) => answer.accepted));
      const full = new Set(answers.flatMap((answer) => answer.full));
      // In the order given; an id given twice is accepted once.
      const result: Accepted = { accepted: [], duplicate: [], full: [] };
      for (const { item } of keyed) {
        if (accepted.delete(item.id)) result.accepted.push(item.id);
        else if (full.delete(item.id)) result.full.push(item.id);
        else result.duplicate.push(item.id);
      }
      return result;
    },
    lease: async () => notHere(),
    sending: async () => notHere(),
    settle: async () => notHere(),
    lead: async () => notHere(),
    async deadLetters(options = {}) {
      const lists = await Promise.all(
        all().map(async (shard) =>
          ((await object(outboxName(shard)).deadLetters(options)) as DeadLetter[]).map((letter) => ({ ...letter, seq: seqOf(letter.seq, shard) })),
        ),
      );
      const letters = lists.flat().sort((a, b) => a.failed - b.failed || a.seq - b.seq);
      return options.limit === undefined ? letters : letters.slice(0, options.limit);
    },
    async retryDead(seqs, now) {
      const groups = seqs === undefined ? new Map(all().map((shard) => [shard, undefined])) : bySeqShard(seqs);
      const counts = await Promise.all(
        [...groups].map(async ([shard, part]) => {
          const stub = object(outboxName(shard));
          const count = (await stub.retryDead(
            part?.map((seq) => Math.floor(seq / MAX_SHARDS)),
            now,
          )) as number;
          if (count > 0) await stub.wake();
          return count;
        }),
      );
      return counts.reduce((sum, n) => sum + n, 0);
    },
    async dropDead(seqs) {
      const groups = seqs === undefined ? new Map(all().map((shard) => [shard, undefined])) : bySeqShard(seqs);
      const counts = await Promise.all(
        [...groups].map(([shard, part]) => object(outboxName(shard)).dropDead(part?.map((seq) => Math.floor(seq / MAX_SHARDS))) as Promise<number>),
      );
      return counts.reduce((sum, n) => sum + n, 0);
    },
    // A person's entries may be in any object (they live with their browser): every object drops its own.
    async erase(person, site, now) {
      const each = await Promise.all(all().map((shard) => object(outboxName(shard)).erase(person, site, now) as Promise<Erased>));
      return each.reduce(addErased, NOTHING_ERASED);
    },
    async suppress(rows, until, now) {
      await object(SUPPRESSION_OBJECT).suppress([...rows], until, now);
    },
    async suppressed(now) {
      return (await object(SUPPRESSION_OBJECT).suppressed(now)) as Suppression[];
    },
    async stats() {
      const each = await Promise.all(all().map((shard) => object(outboxName(shard)).stats()));
      const sum = (key: keyof OutboxStats) => each.reduce((total, s) => total + s[key], 0);
      return { pending: sum('pending'), dead: sum('dead'), remembered: sum('remembered'), expired: sum('expired'), cut: sum('cut') };
    },
  };
}
