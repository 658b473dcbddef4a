/**
 * Node persistence for the memory store: one JSON line per forwarded id or counter change,
 * appended before the relay answers, compacted (expired ids dropped) at start.
 * @module
 */
import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createMemoryStore, type MemoryStore, type PersistedEntry, type Persistence } from './memory.js';

/** A {@link Persistence} in the file at `path` (created when missing). */
export function filePersistence(path: string, now: () => number = Date.now): Persistence {
  let queue: Promise<void> = Promise.resolve();
  return {
    async load() {
      let text = '';
      try {
        text = await readFile(path, 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      const latest = new Map<string, PersistedEntry>();
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        try {
          const entry = JSON.parse(line) as PersistedEntry;
          const id = entry.kind === 'forwarded' ? `f\u0000${entry.scope}\u0000${entry.id}` : `c\u0000${entry.scope}\u0000${entry.name}`;
          latest.set(id, entry);
        } catch {
          // A line cut short by a crash mid-write: everything before it is intact.
        }
      }
      const kept = [...latest.values()].filter((entry) => entry.kind === 'counter' || entry.until > now());
      await mkdir(dirname(path), { recursive: true });
      const temporary = `${path}.${process.pid}.tmp`;
      await writeFile(temporary, kept.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
      await rename(temporary, path);
      return kept;
    },
    append(entries) {
      // Appends are serialised so lines never interleave.
      queue = queue.then(() => appendFile(path, entries.map((entry) => `${JSON.stringify(entry)}\n`).join('')));
      return queue;
    },
  };
}

/** The memory store persisted to `path`: forwarded ids and counters survive a restart. */
export function createFileStore(path: string): MemoryStore {
  return createMemoryStore({ persistence: filePersistence(path) });
}
