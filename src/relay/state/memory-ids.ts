/**
 * The ids one site's in-process outbox remembers for its dedupe window (memory-outbox.ts): each
 * id's 16 bytes (ids.ts) in an open-addressed table of typed arrays, with when it may be forgotten.
 * No string or object is made per id. A `Map` of each id's 16-character string was about half of
 * what the memory outbox's accept cost at 100,000 ids: a string made and hashed for every item,
 * look-ups that miss the caches, and every id an object the collector copied twice, then marked
 * at every major GC. Typed arrays hold nothing for the collector to trace.
 *
 * Ids are forgotten in the order they were remembered (the window is the outbox's, the same for
 * every id) from a ring of their slots. The hash is seeded per table, as V8 seeds its own string
 * hashes: ids are the browsers' to choose, and ids chosen to collide would make every look walk.
 * @module
 */
import { writeCompactId } from './ids.js';

/** `until` of a slot never used: a look stops there. */
const FREE = 0;
/** `until` of a slot whose id was forgotten: a look goes on past it, and an id may be put there. */
const GONE = -1;
const FIRST_SLOTS = 1024;

/** The id looked up, as its 16 bytes and as the four words they make (to compare and hash). */
const bytes = new Uint8Array(16);
const words = new Int32Array(bytes.buffer);

/** A site's remembered ids: {@link IdWindow.look} up an id, then {@link IdWindow.remember} it (or not). */
export class IdWindow {
  /** ids remembered and not forgotten */
  size = 0;
  private readonly seed = (Math.random() * 0x1_0000_0000) | 0;
  private mask = FIRST_SLOTS - 1;
  /** each slot's id, four words a slot */
  private ids = new Int32Array(FIRST_SLOTS * 4);
  /** each slot's end: FREE, GONE or when its id may be forgotten */
  private until = new Float64Array(FIRST_SLOTS);
  /** how many times an id was put in each slot: the ring's entries of an earlier time are skipped */
  private puts = new Uint32Array(FIRST_SLOTS);
  /** slots not FREE: a look may walk them */
  private used = 0;
  /** the ring: slots in the order their ids were remembered, each with its `puts` then */
  private ringSlots = new Int32Array(FIRST_SLOTS);
  private ringPuts = new Uint32Array(FIRST_SLOTS);
  private head = 0;
  private count = 0;
  /** where the last look found its id (-1: not found), and where it would be put */
  private found = -1;
  private free = -1;

  /** When `id` may be forgotten, if it is remembered; {@link IdWindow.remember} then keeps it. */
  look(id: string): number | undefined {
    writeCompactId(id, bytes, 0);
    return this.probe();
  }

  /** Remembers the id of the last {@link IdWindow.look} until `until`, after every id remembered before it. */
  remember(until: number): void {
    let slot = this.found;
    if (slot === -1) {
      slot = this.free;
      if (this.until[slot] === FREE) this.used++;
      this.ids.set(words, slot * 4);
      this.size++;
    }
    this.until[slot] = until;
    this.puts[slot] = this.puts[slot]! + 1;
    const at = (this.head + this.count) & (this.ringSlots.length - 1);
    this.ringSlots[at] = slot;
    this.ringPuts[at] = this.puts[slot]!;
    this.count++;
    this.found = -1;
    if (this.used * 2 > this.until.length || this.count === this.ringSlots.length) this.rebuild();
  }

  /** Forgets the ids whose end came by `now`, the oldest first. */
  forget(now: number): void {
    while (this.count > 0) {
      const slot = this.ringSlots[this.head]!;
      // An entry of an earlier put of its slot (that id was remembered again since, or forgotten) is dropped.
      if (this.ringPuts[this.head] === this.puts[slot] && this.until[slot] !== GONE) {
        if (this.until[slot]! > now) return;
        this.until[slot] = GONE;
        this.size--;
      }
      this.head = (this.head + 1) & (this.ringSlots.length - 1);
      this.count--;
    }
  }

  /** Looks for the id in `words`: its end, or undefined and where it would go. */
  private probe(): number | undefined {
    const [w0, w1, w2, w3] = [words[0]!, words[1]!, words[2]!, words[3]!];
    let h = Math.imul(this.seed ^ w0, 0x9e3779b1);
    h = Math.imul(h ^ (h >>> 16) ^ w1, 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13) ^ w2, 0xc2b2ae35);
    h = Math.imul(h ^ (h >>> 16) ^ w3, 0x9e3779b1);
    // murmur3's finaliser: every bit of the id reaches the low bits the mask keeps.
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    h ^= h >>> 16;
    const { ids, until, mask } = this;
    let free = -1;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const end = until[slot]!;
      if (end === FREE) {
        this.found = -1;
        this.free = free === -1 ? slot : free;
        return undefined;
      }
      if (end === GONE) {
        if (free === -1) free = slot;
      } else if (ids[slot * 4] === w0 && ids[slot * 4 + 1] === w1 && ids[slot * 4 + 2] === w2 && ids[slot * 4 + 3] === w3) {
        this.found = slot;
        return end;
      }
    }
  }

  /** Into tables four times the ids remembered (at least the first size), in their order; forgotten slots and earlier ring entries left behind. */
  private rebuild(): void {
    const { ids, until, puts, ringSlots, ringPuts, head, count } = this;
    let slots = FIRST_SLOTS;
    while (slots < this.size * 4) slots *= 2;
    this.mask = slots - 1;
    this.ids = new Int32Array(slots * 4);
    this.until = new Float64Array(slots);
    this.puts = new Uint32Array(slots);
    this.ringSlots = new Int32Array(slots);
    this.ringPuts = new Uint32Array(slots);
    this.head = 0;
    this.count = 0;
    this.used = 0;
    this.size = 0;
    for (let i = 0; i < count; i++) {
      const at = (head + i) & (ringSlots.length - 1);
      const slot = ringSlots[at]!;
      if (ringPuts[at] !== puts[slot] || until[slot] === GONE) continue;
      words.set(ids.subarray(slot * 4, slot * 4 + 4));
      this.probe();
      this.remember(until[slot]!);
    }
  }
}
