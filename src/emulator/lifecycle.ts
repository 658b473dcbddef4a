/**
 * Archive, restore and delete for people, accounts and organizations: a record must be
 * archived before it can be restored or deleted (a clear 400 otherwise). Answers carry the
 * recorded counter names; everything is processed at once, so `scheduled_*` is 0.
 * @module
 */
import { fail } from './errors.js';
import type { Store } from './store.js';
import type { RecordCounts } from '../api/index.js';

export type Operation = 'archive' | 'restore' | 'delete';
type Kind = 'person' | 'account';

interface Selection {
  inclusion_ids?: string[] | undefined;
  exclusion_ids?: string[] | undefined;
  all_rows_selected?: boolean | undefined;
}

const PAST: Record<Operation, string> = { archive: 'archived', restore: 'restored', delete: 'deleted' };

/** Counter names as recorded: people `*_contacts`; accounts and organizations `*_organizations`, but delete `*_accounts`. */
function counters(kind: Kind, operation: Operation, count: number): Record<string, number> {
  if (kind === 'person') return { scheduled_contacts: 0, [`${PAST[operation]}_contacts`]: count };
  const noun = operation === 'delete' ? 'accounts' : 'organizations';
  return { [`scheduled_${noun}`]: 0, [`${PAST[operation]}_${noun}`]: count };
}

export function lifecycle(store: Store, kind: Kind, operation: Operation, body: Selection): RecordCounts {
  const records: Map<string, { id: string; archived: boolean }> = kind === 'person' ? store.people : store.accounts;
  const noun = kind === 'person' ? 'person' : 'account';
  const wantArchived = operation !== 'archive';
  const exclude = new Set(body.exclusion_ids ?? []);
  let selected: Array<{ id: string; archived: boolean }>;
  if (body.all_rows_selected === true) {
    // archive acts on the main list; restore and delete on the archived list
    selected = [...records.values()].filter((r) => r.archived === wantArchived && !exclude.has(r.id));
  } else {
    const ids = [...new Set(body.inclusion_ids ?? [])].filter((id) => !exclude.has(id));
    const missing = ids.filter((id) => !records.has(id));
    if (missing.length > 0)
      fail(
        `No ${noun} has ID ${missing
          .slice(0, 5)
          .map((id) => JSON.stringify(id))
          .join(', ')}`,
      );
    selected = ids.map((id) => records.get(id)!);
    if (wantArchived) {
      const active = selected.filter((r) => !r.archived);
      if (active.length > 0) {
        fail(
          `Cannot ${operation} ${noun} ${active
            .slice(0, 5)
            .map((r) => r.id)
            .join(', ')}: only archived records can be ${PAST[operation]}; archive ${active.length === 1 ? 'it' : 'them'} first`,
        );
      }
    } else {
      selected = selected.filter((r) => !r.archived);
    }
  }
  for (const record of selected) {
    if (kind === 'person') {
      const person = store.people.get(record.id)!;
      if (operation === 'delete') store.deletePerson(person);
      else person.archived = operation === 'archive';
    } else {
      const account = store.accounts.get(record.id)!;
      if (operation === 'archive') {
        // An archived organization is unlinked from its people (spec, states and transitions).
        for (const personId of account.members) {
          const person = store.people.get(personId);
          if (person) person.accountId = null;
        }
        account.members.clear();
      }
      if (operation === 'delete') store.accounts.delete(account.id);
      else account.archived = operation === 'archive';
    }
  }
  if (selected.length > 0) store.touch();
  return counters(kind, operation, selected.length);
}
