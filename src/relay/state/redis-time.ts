/**
 * Redis's clock for the times the outbox keeps there (lead lock, leases, the pacer, remembered ids):
 * every relay sharing one Redis measures how far its own clock is from Redis's (`TIME`, half the
 * round trip allowed for, the best of three) and shifts every time it sends by that much, so relays whose clocks
 * differ by seconds agree on when a lock or a lease ends and on the pace. Measured at connect and
 * again at most once a second while the outbox is used; a failed measure keeps the last one.
 * A difference under {@link TOLERANCE_MS} is taken as none, and the shift changes only when the
 * difference moves by more than that (a clock step), so round-trip noise never moves the times a
 * relay sends between two calls. Durations (a lease's length, the window) are sent as they are.
 * @module
 */
import type { Redis } from 'ioredis';
import type { Clock } from '../core/clock.js';
import type { OutboxStore } from './outbox.js';

/** Clocks this close to Redis's are taken as they are: the lock's and the leases' margins are seconds. */
export const TOLERANCE_MS = 250;

export interface RedisTime {
  /** `time` on the caller's clock, as ms on Redis's clock (rounded) */
  at(time: number): number;
}

/** Measures `clock` against `redis`'s `TIME` now, and keeps it fresh. */
export async function redisTime(redis: Redis, clock: Clock): Promise<RedisTime> {
  let offset = 0;
  let measured = Number.NEGATIVE_INFINITY;
  let measuring: Promise<void> | undefined;
  // Three samples, the one with the shortest round trip kept: its error is at most half of it.
  const measure = async () => {
    let best = { trip: Number.POSITIVE_INFINITY, difference: 0 };
    for (let i = 0; i < 3; i++) {
      const before = clock.now();
      const [seconds, micros] = await redis.time();
      const after = clock.now();
      if (after - before < best.trip) best = { trip: after - before, difference: Number(seconds) * 1000 + Number(micros) / 1000 - (before + after) / 2 };
    }
    if (Math.abs(best.difference - offset) > TOLERANCE_MS) offset = Math.round(best.difference);
    measured = clock.now();
  };
  await measure();
  return {
    at(time) {
      if (measuring === undefined && clock.now() - measured >= 1000) {
        measuring = measure()
          .catch(() => {})
          .finally(() => {
            measuring = undefined;
          });
      }
      return Math.round(time + offset);
    },
  };
}

/**
 * `store` with every time it is given moved onto Redis's clock (the `now` of each call, a
 * released entry's `notBefore`, a hold's end); durations and the rest pass as they are.
 */
export function onRedisTime(store: OutboxStore, time: RedisTime): OutboxStore {
  const { outbox } = store;
  return {
    ...store,
    outbox: {
      ...outbox,
      accept: (items, now, ...rest) => outbox.accept(items, time.at(now), ...rest),
      lease: (owner, max, now, ...rest) => outbox.lease(owner, max, time.at(now), ...rest),
      sending: (owner, seqs, now) => outbox.sending(owner, seqs, time.at(now)),
      // a settle's `now` only dates its dead letters: it stays on the caller's clock, as they are read
      settle: (owner, settlement, now) =>
        outbox.settle(owner, { ...settlement, released: settlement.released.map((entry) => ({ ...entry, notBefore: time.at(entry.notBefore) })) }, now),
      lead: (owner, now, ttlMs) => outbox.lead(owner, time.at(now), ttlMs),
      retryDead: (seqs, now) => outbox.retryDead(seqs, time.at(now)),
    },
    pacer(rate, catchUpMs) {
      const pacer = store.pacer(rate, catchUpMs);
      return { take: (now, priority) => pacer.take(time.at(now), priority), hold: (until) => pacer.hold(time.at(until)) };
    },
  };
}
