/**
 * The in-process store: dedupe ids, leases and counters in Maps, forgotten on restart. For tests
 * and `createRelay`'s default; a relay that must remember across restarts or share its state with
 * other processes uses SQLite or Redis (src/relay/state/).
 * @module
 */
import { cappedAmount, type Claim, type RelayStore } from './store.js';

/** Creates the in-process store. Expired ids are swept at most once a minute, so memory follows the dedupe window. */
export function createMemoryStore(): RelayStore {
  const forwarded = new Map<string, number>();
  const leases = new Map<string, number>();
  const counters = new Map<string, number>();
  const key = (site: string, id: string) => `${site}\u0000${id}`;

  let swept = 0;
  function sweep(now: number) {
    if (now - swept < 60_000) return;
    swept = now;
    for (const [id, until] of forwarded) if (until <= now) forwarded.delete(id);
    for (const [id, until] of leases) if (until <= now) leases.delete(id);
  }

  return {
    async claim({ site }, ids, now, leaseMs) {
      sweep(now);
      const claim: Claim = { fresh: [], duplicate: [], busy: [] };
      for (const id of ids) {
        const k = key(site, id);
        if ((forwarded.get(k) ?? 0) > now) claim.duplicate.push(id);
        else if ((leases.get(k) ?? 0) > now) claim.busy.push(id);
        else {
          leases.set(k, now + leaseMs);
          claim.fresh.push(id);
        }
      }
      return claim;
    },
    async settle({ site }, { forwarded: ids, until, released }) {
      for (const id of ids) {
        forwarded.set(key(site, id), until);
        leases.delete(key(site, id));
      }
      for (const id of released) leases.delete(key(site, id));
    },
    async add(site, name, amount, limit) {
      const k = key(site, name);
      const value = counters.get(k) ?? 0;
      const added = cappedAmount(value, amount, limit);
      if (added > 0) counters.set(k, value + added);
      return added;
    },
    async ping() {},
    async stats() {
      return { remembered: forwarded.size, leased: leases.size };
    },
    async close() {},
  };
}
