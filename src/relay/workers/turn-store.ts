/**
 * The merge turns a pacer object holds (state/turns.ts), kept in its storage as well as in memory:
 * an object that restarts (a deploy, an eviction) while merge calls are in flight reads them back,
 * so their people still wait for them. One row per pacer, the held turns as JSON; the line of
 * waiting calls is not stored (they ask again within a tenth of a second).
 * @module
 */
import type { DurableObjectState } from '@cloudflare/workers-types/index.ts';
import { parseJsonOrUndefined } from '../../api/objects.js';
import { heldTurns, restoreTurns, type TurnBook } from '../state/turns.js';

type Sql = DurableObjectState['storage']['sql'];

export const TURNS_TABLE = 'CREATE TABLE IF NOT EXISTS turns (name TEXT PRIMARY KEY, held TEXT NOT NULL);';

/** The turns pacer `name` held when last stored (none when never). */
export function readTurns(sql: Sql, name: string): TurnBook {
  const held = sql.exec<{ held: string }>('SELECT held FROM turns WHERE name = ?', name).toArray()[0]?.held;
  // A row that is not JSON (it never should be) reads as no turns: merges go on, never stuck on it.
  return restoreTurns(held === undefined ? [] : parseJsonOrUndefined(held));
}

/** Stores the turns `book` holds. */
export function writeTurns(sql: Sql, name: string, book: TurnBook): void {
  sql.exec('INSERT INTO turns (name, held) VALUES (?1, ?2) ON CONFLICT(name) DO UPDATE SET held = ?2', name, JSON.stringify(heldTurns(book)));
}
