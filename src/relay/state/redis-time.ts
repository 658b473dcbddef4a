/**
 * Time on Redis is Redis's: every script that keeps or compares a time (locks, leases, the pacer,
 * buckets, remembered ids) reads `TIME` itself ({@link NOW}), and a relay sends durations only, so
 * relays whose clocks differ or step keep one time. A time a relay holds (a hold's end, an id's
 * `until`) travels as how far it is from the relay's own now.
 *
 * `callerTime` makes the scripts take the `now` each call is given instead: only for tests that
 * move time by hand (the shared store suites). Relays never set it.
 * @module
 */
import { systemClock, type Clock } from '../core/clock.js';

export interface RedisTimeOptions {
  /** the clock the callers read their times from @default the system's */
  clock?: Clock;
  /** take the callers' `now` instead of Redis's `TIME`: tests that move time by hand only */
  callerTime?: boolean;
}

/**
 * Lua: `now` in ms on Redis's clock (`TIME`: Redis 7 replicates effects, so it may precede
 * writes), or the `now` in ARGV[arg] when one is given (`callerTime`).
 */
export const NOW = (arg: number) => `
local now = tonumber(ARGV[${arg}])
if not now then local t = redis.call('TIME') now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) end`;

/** How a store turns its callers' times into a script's arguments. */
export interface RedisTime {
  /** the callers' clock */
  clock: Clock;
  /** the `now` argument a script takes: none ('': it reads `TIME`), or the caller's with `callerTime` */
  at(now: number): number | '';
  /** a time on the callers' clock as the two arguments `now`, ms from now: the script adds them */
  time(time: number): [number | '', number];
}

export function redisTime(options: RedisTimeOptions): RedisTime {
  const clock = options.clock ?? systemClock;
  const at = (now: number) => (options.callerTime ? Math.round(now) : '');
  return {
    clock,
    at,
    time: (time) => (options.callerTime ? [0, Math.round(time)] : ['', Math.round(time - clock.now())]),
  };
}
