/**
 * The queue consumer's state on Workers, in the {@link RelayState} objects:
 * - the delivery ledger: which item ids of a site were delivered (or dead-lettered) within the
 *   dedupe window, and which are leased to a consumer right now. Ids are 16 bytes
 *   (state/ids.ts) and sharded over `RELAY_SHARDS` objects per site by a hash of the id, so
 *   the same id meets the same object whatever the envelope's `queue` said;
 * - the pacer: one object per platform key that every isolate asks before each platform call.
 * @module
 */
import type { DurableObjectNamespace } from '@cloudflare/workers-types/index.ts';
import { sha256 } from '@noble/hashes/sha2.js';
import { compactId, compactIdString } from '../state/ids.js';
import { paceInterval } from '../state/pace.js';
import type { Pacer } from '../state/outbox.js';
import { type DeliveryClaim, hash, type RelayState, shardName } from './state.js';

/** What the ledger says of one id. */
export type Claimed = 'fresh' | 'attempted' | 'done' | 'busy';

export interface DeliverySettlement {
  delivered: readonly string[];
  dead: readonly string[];
  released: readonly string[];
}

export interface DeliveryLedger {
  /** Leases the ids of `site` to `owner` (see {@link RelayState.claimDelivery}); one object call per shard touched, in parallel. */
  claim(site: string, ids: readonly string[], owner: string, now: number, leaseMs: number, windowMs: number): Promise<Map<string, Claimed>>;
  /** A call carrying `ids` is about to go (see {@link RelayState.markSending}): resolves to the ids marked, still `owner`'s. */
  sending(site: string, ids: readonly string[], owner: string, now: number): Promise<Set<string>>;
  /** Ends `owner`'s leases; resolves to how many ids were not `owner`'s. */
  settle(site: string, owner: string, settlement: DeliverySettlement, until: number): Promise<number>;
}

/** The objects of the ledger are apart from /collect's own shards (`site#n`). */
const ledgerName = (site: string, shard: number) => shardName(`delivered:${site}`, shard);

/** An id's 16 bytes as their own ArrayBuffer (what SQLite binds as a BLOB and RPC copies). */
const blob = (id: string): ArrayBuffer => compactId(id).slice().buffer;

function byShard(ids: readonly string[], shards: number): Map<number, string[]> {
  const groups = new Map<number, string[]>();
  for (const id of ids) {
    const shard = hash(compactIdString(id)) % shards;
    const group = groups.get(shard);
    if (group) group.push(id);
    else groups.set(shard, [id]);
  }
  return groups;
}

export function createDeliveryLedger(namespace: DurableObjectNamespace<RelayState>, shards: number): DeliveryLedger {
  const object = (site: string, shard: number) => namespace.get(namespace.idFromName(ledgerName(site, shard)));
  return {
    async claim(site, ids, owner, now, leaseMs, windowMs) {
      const found = new Map<string, Claimed>();
      await Promise.all(
        [...byShard(ids, shards)].map(async ([shard, part]) => {
          const claim = (await object(site, shard).claimDelivery(part.map(blob), owner, now, leaseMs, windowMs)) as DeliveryClaim;
          for (const kind of ['fresh', 'attempted', 'done', 'busy'] as const) for (const index of claim[kind]) found.set(part[index]!, kind);
        }),
      );
      return found;
    },
    async sending(site, ids, owner, now) {
      const marked = new Set<string>();
      await Promise.all(
        [...byShard(ids, shards)].map(async ([shard, part]) => {
          for (const index of (await object(site, shard).markSending(part.map(blob), owner, now)) as number[]) marked.add(part[index]!);
        }),
      );
      return marked;
    },
    async settle(site, owner, settlement, until) {
      const shardsOf = {
        delivered: byShard(settlement.delivered, shards),
        dead: byShard(settlement.dead, shards),
        released: byShard(settlement.released, shards),
      };
      const touched = new Set([...shardsOf.delivered.keys(), ...shardsOf.dead.keys(), ...shardsOf.released.keys()]);
      const skipped = await Promise.all(
        [...touched].map(
          (shard) =>
            object(site, shard).settleDelivery(
              owner,
              {
                delivered: (shardsOf.delivered.get(shard) ?? []).map(blob),
                dead: (shardsOf.dead.get(shard) ?? []).map(blob),
                released: (shardsOf.released.get(shard) ?? []).map(blob),
              },
              until,
            ) as Promise<number>,
        ),
      );
      return skipped.reduce((sum, n) => sum + n, 0);
    },
  };
}

/** The pacer object of a platform key: named by a digest, so the key itself is in no object's name. */
export function pacerName(baseUrl: string, apiKey: string): string {
  const digest = sha256(new TextEncoder().encode(`${baseUrl}\u0000${apiKey}`));
  return `pacer:${[...digest.subarray(0, 12)].map((byte) => byte.toString(16).padStart(2, '0')).join('')}`;
}

/** A {@link Pacer} in one {@link RelayState} object: every isolate of the deployment spends the same budget. */
export function createDurablePacer(namespace: DurableObjectNamespace<RelayState>, name: string, rate: number): Pacer {
  const interval = paceInterval(rate);
  const id = namespace.idFromName(name);
  // A stub per call: a stub belongs to the request (or batch) that made it.
  return {
    take: async (now, priority) => (await namespace.get(id).take(name, now, priority, interval)) as number,
    hold: async (until) => {
      await namespace.get(id).hold(name, until);
    },
  };
}
