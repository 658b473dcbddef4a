/**
 * The pacer of the SQL outbox (sql-outbox.ts): the pacing rule of pace.ts on the key's one row,
 * each ask one transaction of the port. And its fast path ({@link Pacer.stepsWith}): a deliver
 * call's slot, its place in the shared window and its `sending` mark in one transaction, where
 * asked apart they are three, each with its WAL sync on a file. The slot and the place are written
 * in the same commit as the mark, so they are on the disk before the call leaves, as apart.
 * @module
 */
import { parseJsonOrUndefined } from '../../api/objects.js';
import type { CallStep, Outbox, Pacer } from './outbox.js';
import { pace, paceHold, paceLeave, type PaceState, paceInterval, sharedWindow } from './pace.js';
import type { Leases } from './sql-lease.js';
import type { Row, SqlPort } from './sql-port.js';

const PACER = 'platform';

export const PACER_SQL = {
  pacer: `SELECT tat, hold FROM outbox_pacer WHERE name = '${PACER}'`,
  setPacer: `INSERT INTO outbox_pacer (name, tat, hold) VALUES ('${PACER}', ?1, ?2) ON CONFLICT (name) DO UPDATE SET tat = excluded.tat, hold = excluded.hold`,
  pacerCalls: `SELECT calls FROM outbox_pacer_calls WHERE name = '${PACER}'`,
  setPacerCalls: `INSERT INTO outbox_pacer_calls (name, calls) VALUES ('${PACER}', ?1) ON CONFLICT (name) DO UPDATE SET calls = excluded.calls`,
} as const;

/** The pacers over `db` (its tables made already); the fast path marks entries of `outbox`, through `leases`. */
export function createSqlPacers(db: SqlPort, leases: Leases, outbox: Outbox): (rate: number, catchUpMs?: number) => Pacer {
  const one = (sql: string): Row | undefined => db.query(sql)[0];
  const pacerState = (): PaceState => {
    const [tat, hold] = one(PACER_SQL.pacer) ?? [0, 0];
    const shared = parseJsonOrUndefined(String(one(PACER_SQL.pacerCalls)?.[0] ?? '{}')) as Record<string, unknown> | undefined;
    const calls = Array.isArray(shared?.['calls']) ? shared['calls'].filter((at): at is number => typeof at === 'number') : [];
    const number = (name: string) => (typeof shared?.[name] === 'number' ? shared[name] : undefined);
    return { tat: Number(tat), hold: Number(hold), calls, pending: number('pending'), margin: number('margin'), widened: number('widened') };
  };
  const writePacer = (state: PaceState) => {
    db.run(PACER_SQL.setPacer, state.tat, state.hold);
    db.run(PACER_SQL.setPacerCalls, JSON.stringify({ calls: state.calls ?? [], pending: state.pending, margin: state.margin, widened: state.widened }));
  };
  /** One look of the pacing rule (`look`) in a transaction, written back when it granted (or `always`). */
  const paceIn = (look: (state: PaceState) => number, always = false) =>
    db.transaction(() => {
      const state = pacerState();
      const wait = look(state);
      if (wait > 0 && !always) return wait;
      writePacer(state);
      return wait;
    });

  return (rate, catchUpMs = 0) => {
    const interval = paceInterval(rate);
    const window = sharedWindow(rate);
    const step: CallStep = ({ now, take, inMs, again, sending }) =>
      db.transaction(() => {
        const state = pacerState();
        if (take) {
          // A deliver ask is granted (0) or told to wait: nothing taken, nothing written.
          const wait = pace(state, now, 'deliver', interval, catchUpMs, window);
          if (wait !== 0) return { taken: false, wait };
        }
        const shared = paceLeave(state, now, inMs, window, again);
        // As `leave` alone: a count moved (`again`) is stored even when the call does not fit; and a slot taken stays taken.
        if (shared > 0) {
          if (take || again) writePacer(state);
          return { taken: take, wait: inMs + shared };
        }
        writePacer(state);
        if (sending === undefined) return { taken: take, wait: 0 };
        return { taken: take, wait: 0, marked: leases.sending(sending.owner, sending.seqs, now) };
      });
    return {
      take: (now, priority) => paceIn((state) => pace(state, now, priority, interval, catchUpMs, window)),
      // A count moved (`again`) is stored even when the call does not fit: it did not leave then.
      leave: (now, inMs, again) => paceIn((state) => paceLeave(state, now, inMs, window, again), again),
      hold: (until, now) =>
        db.transaction(() => {
          const state = pacerState();
          paceHold(state, now, until);
          writePacer(state);
        }),
      stepsWith: (of) => (of === outbox ? step : undefined),
    };
  };
}
