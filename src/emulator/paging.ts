/**
 * Paging of `person/get` and `organizations/get`: `limit` 1–500 (anything else is taken as
 * 50), `offset`, and `cursor_id` — the ID of the last record of the previous page; when it
 * is given and still in the result, the next page starts after it (so records created or
 * removed meanwhile do not shift the page), else `offset` applies. Past the end the records
 * are `null` and the cursor is all zeros (recorded).
 * @module
 */
import { LIMITS } from '../api/index.js';
import { END_CURSOR } from './ids.js';

export interface Page<T> {
  items: T[] | null;
  offset: number;
  next_offset: number;
  cursor_id: string;
  has_more: boolean;
}

/** The page size the platform uses for `limit`. */
export function pageSize(limit: unknown): number {
  return typeof limit === 'number' && Number.isInteger(limit) && limit >= LIMITS.page.min && limit <= LIMITS.page.max ? limit : LIMITS.page.default;
}

export function pageOf<T extends { id: string }>(list: readonly T[], body: { limit?: unknown; offset?: unknown; cursor_id?: unknown }): Page<T> {
  const size = pageSize(body.limit);
  let start = typeof body.offset === 'number' ? body.offset : 0;
  if (typeof body.cursor_id === 'string') {
    if (body.cursor_id === END_CURSOR) start = list.length;
    else {
      const at = list.findIndex((item) => item.id === body.cursor_id);
      if (at >= 0) start = at + 1;
    }
  }
  const items = list.slice(start, start + size);
  const hasMore = start + items.length < list.length;
  if (items.length === 0) return { items: null, offset: start, next_offset: start, cursor_id: END_CURSOR, has_more: false };
  return { items, offset: start, next_offset: start + items.length, cursor_id: items[items.length - 1]!.id, has_more: hasMore };
}
