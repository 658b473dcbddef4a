/** Applying a merge's checked fields to a person or account under the merge strategy. */

export type MergeStrategy = 1 | 2 | 3;

const empty = (value: unknown) => value === undefined || value === null || value === '';

/**
 * Writes `fields` onto `current` through `set`:
 * 1 append only (empty fields filled), 2 overwrite (`null` clears; multi-select values are
 * added to unless the field is in `clear`), 3 ignore (nothing changes). `clear` lists fields
 * emptied first (strategy 2 only). Returns whether anything changed.
 */
export function applyFields(
  current: Record<string, unknown>,
  fields: Record<string, unknown>,
  strategy: MergeStrategy,
  clear: Record<string, boolean> | undefined,
  set: (id: string, value: unknown) => void,
  isMulti: (id: string) => boolean,
): boolean {
  if (strategy === 3) return false;
  let changed = false;
  const write = (id: string, value: unknown) => {
    if (JSON.stringify(current[id]) === JSON.stringify(value ?? undefined)) return;
    set(id, value);
    changed = true;
  };
  if (strategy === 2 && clear) for (const [id, on] of Object.entries(clear)) if (on) write(id, null);
  for (const [id, value] of Object.entries(fields)) {
    if (strategy === 1) {
      if (empty(current[id]) && value !== null) write(id, value);
      continue;
    }
    if (value !== null && isMulti(id) && Array.isArray(current[id])) {
      write(id, [...new Set([...(current[id] as string[]), ...(value as string[])])]);
      continue;
    }
    write(id, value);
  }
  return changed;
}
