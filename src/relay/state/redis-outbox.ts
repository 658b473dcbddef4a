/**
 * The outbox and pacer in Redis or Valkey (ioredis): every relay process naming the same
 * `RELAY_REDIS_URL` shares one outbox, one deliverer lock and one platform budget. Each method is
 * one Lua script (redis-outbox-lua.ts, with the key layout), so it is atomic across processes, and
 * each script touches a bounded number of keys: whatever reads a whole list (every dead letter)
 * goes in pages of {@link PAGE}.
 *
 * The scripts touch keys built from the prefix, so the outbox needs one Redis, not a cluster.
 * Connecting moves the previous release's remembered ids into `d:` keys, indexes the browsers
 * of entries stored before the index, and places entries stored before the places, once each
 * (redis-upgrade.ts).
 * The scripts keep and compare times on Redis's clock (redis-time.ts): a relay sends durations
 * only, so relays whose clocks differ or step share one lock, lease and pace.
 * @module
 */
import { Buffer } from 'node:buffer';
import { ERASE, SUPPRESS, SUPPRESSED } from './redis-erase-lua.js';
import { type Erased, namesPerson } from './erase.js';
import { compactId } from './ids.js';
import { itemText, leasedOf, sharedStrings } from './item-text.js';
import { DEAD_SLICE, type DeadLetter, type Leased, type OutboxItem, type OutboxStore } from './outbox.js';
import { NO_LIMITS } from '../core/outbox-limits.js';
import { paceInterval, sharedWindow } from './pace.js';
import { connectRedis, type RedisStateOptions } from './redis.js';
import { ACCEPT } from './redis-outbox-accept.js';
import { DEAD, DEAD_LIST, LEAD, LEASE, SENDING, SETTLE, STATS } from './redis-outbox-lua.js';
import { PACE } from './redis-pace-lua.js';
import { importPreviousIds, indexPreviousBrowsers, placePreviousEntries } from './redis-upgrade.js';
import { redisTime } from './redis-time.js';

/** Dead letters one script reads or moves at most. */
const PAGE = 500;

type Arg = string | number | Buffer;
interface Scripts {
  cdpOutboxAccept(...args: Arg[]): Promise<number[]>;
  cdpOutboxLease(...args: Arg[]): Promise<[string, string, number][]>;
  cdpOutboxSending(...args: Arg[]): Promise<number[]>;
  cdpOutboxSettle(...args: Arg[]): Promise<number>;
  cdpOutboxDead(...args: Arg[]): Promise<number>;
  cdpOutboxDeadList(...args: Arg[]): Promise<[string, string, string][]>;
  cdpOutboxLead(...args: Arg[]): Promise<number>;
  cdpOutboxPace(...args: Arg[]): Promise<number>;
  cdpOutboxStats(...args: Arg[]): Promise<[number, number, number, number, number]>;
  cdpOutboxErase(...args: Arg[]): Promise<[number, number, number]>;
  cdpOutboxSuppress(...args: Arg[]): Promise<number>;
  cdpOutboxSuppressed(...args: Arg[]): Promise<string[]>;
}

/** The state store's options: its clock and `callerTime` (redis-time.ts) included. */
export type RedisOutboxOptions = RedisStateOptions;

/** Connects to `url`; resolves once connected, or rejects naming the address. */
export async function createRedisOutbox(url: string, options: RedisOutboxOptions = {}): Promise<OutboxStore> {
  const P = options.prefix ?? 'cdp-edge:';
  const script = (lua: string) => ({ lua, numberOfKeys: 0 });
  const redis = await connectRedis(url, options, {
    cdpOutboxAccept: script(ACCEPT),
    cdpOutboxLease: script(LEASE),
    cdpOutboxSending: script(SENDING),
    cdpOutboxSettle: script(SETTLE),
    cdpOutboxDead: script(DEAD),
    cdpOutboxDeadList: script(DEAD_LIST),
    cdpOutboxLead: script(LEAD),
    cdpOutboxPace: script(PACE),
    cdpOutboxStats: script(STATS),
    cdpOutboxErase: script(ERASE),
    cdpOutboxSuppress: script(SUPPRESS),
    cdpOutboxSuppressed: script(SUPPRESSED),
  });
  const run = redis as unknown as Scripts;
  await Promise.all([importPreviousIds(redis, P), indexPreviousBrowsers(redis, P).then(() => placePreviousEntries(redis, P))]).catch((error: unknown) => {
    redis.disconnect();
    throw error;
  });
  const { clock, at } = redisTime(options);
  const ms = (value: number) => Math.round(value);
  /** Retries (0) or drops (1) the named dead letters, or all of them a page at a time. */
  const moveDead = async (seqs: readonly number[] | undefined, drop: 0 | 1): Promise<number> => {
    let count = 0;
    for (let i = 0; seqs === undefined || i < seqs.length; i += PAGE) {
      const moved = Number(await run.cdpOutboxDead(P, seqs === undefined ? 'page' : JSON.stringify(seqs.slice(i, i + PAGE)), PAGE, drop));
      count += moved;
      if (seqs === undefined && moved < PAGE) break;
    }
    return count;
  };

  return {
    outbox: {
      async accept(items, now, windowMs, limits = NO_LIMITS) {
        const bounds = [limits.visitor, limits.site, limits.total, limits.dead, DEAD_SLICE].map((bound) => Math.min(bound, Number.MAX_SAFE_INTEGER));
        const args = items.flatMap((item) => [
          item.site,
          Buffer.from(compactId(item.id)),
          item.visitor,
          item.kind === 'activity' ? 'a' : 'm',
          item.browser,
          itemText(item),
        ]);
        const flags = await run.cdpOutboxAccept(P, at(now), ms(windowMs), ...bounds, ...args);
        const pick = (flag: number) => items.filter((_, i) => flags[i] === flag).map((item) => item.id);
        return { accepted: pick(1), duplicate: pick(0), full: pick(2) };
      },
      async lease(owner, max, now, leaseMs) {
        if (max <= 0) return [];
        const rows = await run.cdpOutboxLease(P, owner, at(now), ms(leaseMs), Math.floor(max));
        const share = sharedStrings();
        return rows.map(([seq, item, attempts]): Leased => leasedOf(item, Number(seq), Number(attempts), share));
      },
      async sending(owner, seqs, now) {
        if (seqs.length === 0) return [];
        const marked = new Set((await run.cdpOutboxSending(P, owner, at(now), ...new Set(seqs))).map(Number));
        return seqs.filter((seq) => marked.delete(seq));
      },
      async settle(owner, { delivered, released, dead }, now) {
        const waits = released.map(({ seq, notBefore, tried }) => ({ seq, wait: ms(notBefore - now), ...(tried ? { tried: true } : {}) }));
        const skipped = await run.cdpOutboxSettle(P, owner, at(now), JSON.stringify({ delivered, released: waits, dead }), ms(now));
        return { skipped: Number(skipped) };
      },
      async lead(owner, now, ttlMs) {
        return (await run.cdpOutboxLead(P, owner, at(now), ms(ttlMs))) === 1;
      },
      async deadLetters(options = {}) {
        const letters: DeadLetter[] = [];
        const limit = options.limit ?? Number.POSITIVE_INFINITY;
        let after = 0;
        while (letters.length < limit) {
          const size = Math.min(PAGE, limit - letters.length);
          const page = await run.cdpOutboxDeadList(P, options.site ?? '', after, size);
          for (const [seq, json, whyJson] of page) {
            const why = JSON.parse(whyJson) as { reason: string; status?: number; failed: number };
            const { reason, status, failed } = why;
            letters.push({ ...(JSON.parse(json) as OutboxItem), seq: Number(seq), reason, ...(status === undefined ? {} : { status }), failed });
            after = Number(seq);
          }
          if (page.length < size) break;
        }
        return letters;
      },
      retryDead: (seqs) => moveDead(seqs, 0),
      dropDead: (seqs) => moveDead(seqs, 1),
      // The scan reads every entry once (an admin's rare step); the script then drops, in one step, what is still there and not leased.
      async erase(person, site, now) {
        const erased: Erased = { waiting: 0, dead: 0, inFlight: 0 };
        let cursor = '0';
        do {
          const [next, pairs] = await redis.hscan(`${P}o:items`, cursor, 'COUNT', PAGE);
          cursor = next;
          const seqs: string[] = [];
          for (let i = 0; i < pairs.length; i += 2) if (namesPerson(JSON.parse(pairs[i + 1]!) as OutboxItem, person, site)) seqs.push(pairs[i]!);
          if (seqs.length === 0) continue;
          const [waiting, dead, inFlight] = (await run.cdpOutboxErase(P, at(now), ...seqs)).map(Number) as [number, number, number];
          erased.waiting += waiting;
          erased.dead += dead;
          erased.inFlight += inFlight;
        } while (cursor !== '0');
        return erased;
      },
      async suppress(rows, until, now) {
        await run.cdpOutboxSuppress(P, at(now), ms(until - now), ...rows.map(({ site, hash }) => `${site}\u0000${hash}`));
      },
      async suppressed(now) {
        return (await run.cdpOutboxSuppressed(P, at(now))).map((member) => {
          const [site, hash] = member.split('\u0000') as [string, string];
          return { site, hash };
        });
      },
      async stats() {
        const counts = (await run.cdpOutboxStats(P, at(clock.now()))).map(Number);
        const [pending, dead, remembered, expired, cut] = counts as [number, number, number, number, number];
        return { pending, dead, remembered, expired, cut };
      },
    },
    pacer(rate, catchUpMs = 0) {
      const interval = paceInterval(rate);
      const { budget, ms } = sharedWindow(rate);
      return {
        async take(now, priority) {
          return Number(await run.cdpOutboxPace(P, at(now), priority, interval, catchUpMs, budget, ms));
        },
        async leave(now, inMs, again = false) {
          return Number(await run.cdpOutboxPace(P, at(now), again ? 'leave-again' : 'leave', inMs, catchUpMs, budget, ms));
        },
        // A time this relay holds travels as how far it is from its own now (redis-time.ts).
        async hold(until, now) {
          await run.cdpOutboxPace(P, at(now), 'hold', Math.round(until - now));
        },
      };
    },
    async close() {
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
