/**
 * Who holds the leased entries of the SQL outbox (sql-outbox.ts), in a narrow table of their own:
 * `outbox_lease` (seq; owner, until, attempts), one row per entry under a lease. An entry's own
 * row, with its item, is written once when accepted and deleted once when delivered or dead: a
 * lease, a started send and a settle write only this row (a few bytes), never the item again.
 *
 * A row whose `until` is above 0 is also where its entry waits (in place of `outbox_wait`,
 * sql-ready.ts): a lease that runs out is woken like a release, and its row kept with `until` 0,
 * so that its owner may still settle the entry while no other lease has taken it, and the
 * entry's started sends (`attempts`) stay with it. An entry with no lease keeps its attempts in
 * its own row: 0, unless a release kept them (`tried`), which is the only time that row is
 * written again.
 *
 * Files written before this table kept the lease in the entry's row (`owner`, `available`,
 * `attempts`): opening one moves each lease here once (`outbox_count` 'leases' marks it done).
 * @module
 */
import type { Leased, OutboxItem } from './outbox.js';
import type { Ready } from './sql-ready.js';
import type { Row, SqlPort } from './sql-port.js';

export const LEASE_SCHEMA = `
  CREATE TABLE IF NOT EXISTS outbox_lease (seq INTEGER PRIMARY KEY, owner TEXT NOT NULL, until INTEGER NOT NULL, attempts INTEGER NOT NULL);
  CREATE INDEX IF NOT EXISTS outbox_lease_until ON outbox_lease (until, seq) WHERE until > 0;
`;

const IN = 'SELECT value FROM json_each(?1)';

export const LEASE_SQL = {
  items: `SELECT seq, item, attempts FROM outbox WHERE seq IN (${IN})`,
  // [seq, attempts] pairs (?3): a lease that ran out (until 0) keeps its row's attempts.
  take: `INSERT INTO outbox_lease (seq, owner, until, attempts) SELECT value ->> 0, ?1, ?2, value ->> 1 FROM json_each(?3) WHERE true
    ON CONFLICT (seq) DO UPDATE SET owner = excluded.owner, until = excluded.until RETURNING seq, attempts`,
  // Only the owner's live leases: one that ran out may be another deliverer's by now.
  sending: `UPDATE outbox_lease SET attempts = attempts + 1 WHERE seq IN (${IN}) AND owner = ?2 AND until > ?3 RETURNING seq`,
  end: `DELETE FROM outbox_lease WHERE seq IN (${IN}) AND owner = ?2 RETURNING seq, until, attempts`,
  // Released entries whose attempts change ([seq, attempts] pairs): the only rewrite of an entry's row.
  keep: 'UPDATE outbox SET attempts = json_each.value ->> 1 FROM json_each(?1) WHERE outbox.seq = json_each.value ->> 0 AND outbox.attempts <> json_each.value ->> 1',
  // Entries not under a live lease at ?2 taken by ?3 (erase.ts's one step), wherever they wait.
  claim: `INSERT INTO outbox_lease (seq, owner, until, attempts) SELECT value, ?3, 0, 0 FROM json_each(?1) WHERE true
    ON CONFLICT (seq) DO UPDATE SET owner = excluded.owner WHERE outbox_lease.until <= ?2 RETURNING seq`,
  marker: "SELECT value FROM outbox_count WHERE name = 'leases'",
  setMarker: "INSERT INTO outbox_count (name, value) VALUES ('leases', 1) ON CONFLICT (name) DO NOTHING",
  // Files written before this table, once: each lease moves here, waiting here when it waited in outbox_wait (else it ran out and went back: until 0).
  moveAll: [
    `INSERT OR IGNORE INTO outbox_lease (seq, owner, until, attempts)
      SELECT o.seq, o.owner, CASE WHEN EXISTS (SELECT 1 FROM outbox_wait w WHERE w.until = o.available AND w.seq = o.seq) THEN o.available ELSE 0 END, o.attempts
      FROM outbox o WHERE o.owner IS NOT NULL`,
    'DELETE FROM outbox_wait WHERE (until, seq) IN (SELECT until, seq FROM outbox_lease WHERE until > 0)',
    'UPDATE outbox SET owner = NULL WHERE owner IS NOT NULL',
  ],
} as const;

export interface Leases {
  /** Leases `seqs` (taken from the ready) to `owner` until `until`: their items, in seq order, with their attempts. */
  take(owner: string, seqs: readonly number[], until: number): Leased[];
  /** Counts a started send on each of `seqs` under `owner`'s live lease at `now`; resolves to those, in the order given. */
  sending(owner: string, seqs: readonly number[], now: number): number[];
  /**
   * Ends `owner`'s leases of `seqs`: the attempts of each entry that was owner's (a seq named twice,
   * once). Those whose lease had run out are taken from where they went back (ready or held).
   */
  end(owner: string, seqs: readonly number[]): Map<number, number>;
  /** Released entries whose attempts are not 0 any more, or are kept: [seq, attempts] (their rows are written). */
  keep(attempts: readonly (readonly [seq: number, attempts: number])[]): void;
  /** `owner` takes those of `seqs` not under a live lease at `now` (wherever they wait); resolves to them. */
  claim(owner: string, seqs: readonly number[], now: number): number[];
}

/** The leases over `db` (the places of sql-ready.ts made already): adds their table, and moves the leases of a file written before it, once. */
export async function createLeases(db: SqlPort, ready: Ready): Promise<Leases> {
  db.exec(LEASE_SCHEMA);
  if (db.query(LEASE_SQL.marker).length === 0)
    await db.transaction(() => {
      if (db.query(LEASE_SQL.marker).length > 0) return;
      for (const statement of LEASE_SQL.moveAll) db.run(statement);
      db.run(LEASE_SQL.setMarker);
    });

  return {
    take(owner, seqs, until) {
      if (seqs.length === 0) return [];
      const rows: Row[] = db.query(LEASE_SQL.items, JSON.stringify(seqs));
      const pairs = JSON.stringify(rows.map(([seq, , attempts]) => [Number(seq), Number(attempts)]));
      const attempts = new Map(db.query(LEASE_SQL.take, owner, until, pairs).map(([seq, count]) => [Number(seq), Number(count)]));
      return rows
        .map(([seq, item]) => ({ ...(JSON.parse(item as string) as OutboxItem), seq: Number(seq), attempts: attempts.get(Number(seq)) ?? 0 }))
        .sort((a, b) => a.seq - b.seq);
    },
    sending(owner, seqs, now) {
      const marked = new Set(db.query(LEASE_SQL.sending, JSON.stringify([...new Set(seqs)]), owner, now).map(([seq]) => Number(seq)));
      return seqs.filter((seq) => marked.delete(seq));
    },
    end(owner, seqs) {
      if (seqs.length === 0) return new Map();
      const rows = db.query(LEASE_SQL.end, JSON.stringify([...new Set(seqs)]), owner);
      // Waiting under their lease (the usual settle): nowhere else to look.
      const back = rows.filter(([, until]) => Number(until) <= 0).map(([seq]) => Number(seq));
      if (back.length > 0) ready.unplace(back);
      return new Map(rows.map(([seq, , attempts]) => [Number(seq), Number(attempts)]));
    },
    keep(attempts) {
      if (attempts.length > 0) db.run(LEASE_SQL.keep, JSON.stringify(attempts));
    },
    claim: (owner, seqs, now) => (seqs.length === 0 ? [] : db.query(LEASE_SQL.claim, JSON.stringify(seqs), now, owner).map(([seq]) => Number(seq))),
  };
}
