/**
 * The in-process outbox's lists of numbers (memory-ready.ts): seqs in order, and a heap of seqs by time.
 * @module
 */

/** Seqs in increasing order: appended at the end as a rule, taken from the front. */
export class Seqs {
  private list: number[] = [];
  private head = 0;
  get size(): number {
    return this.list.length - this.head;
  }
  first(): number | undefined {
    return this.list[this.head];
  }
  /** `max` of them from the `from`th, in order: one list, no iterator (a lease reads up to thousands of lanes). */
  firstOf(max: number, from = 0): number[] {
    return this.list.slice(this.head + from, this.head + from + max);
  }
  add(seq: number): void {
    if (this.size === 0 || seq > this.list.at(-1)!) this.list.push(seq);
    else this.list.splice(this.find(seq), 0, seq);
  }
  delete(seq: number): void {
    if (this.list[this.head] === seq) this.head++;
    else {
      const at = this.find(seq);
      if (this.list[at] === seq) this.list.splice(at, 1);
    }
    if (this.head > 64 && this.head * 2 > this.list.length) {
      this.list = this.list.slice(this.head);
      this.head = 0;
    }
  }
  private find(seq: number): number {
    let [low, high] = [this.head, this.list.length];
    while (low < high) {
      const mid = (low + high) >> 1;
      if (this.list[mid]! < seq) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}

/**
 * A min-heap of (until, seq) in two lists of numbers; entries that moved on since are skipped as they
 * come out. Every leased entry goes in (its lease's end) and stays until then, delivered or not: as
 * numbers, not a pair each, it holds no object for the collector to copy and mark all that time.
 */
export class Timeline {
  private untils: number[] = [];
  private seqs: number[] = [];
  push(until: number, seq: number): void {
    this.untils.push(until);
    this.seqs.push(seq);
    for (let i = this.untils.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      this.swap(i, parent);
      i = parent;
    }
  }
  /** The earliest's time, if it has come at `now`. */
  due(now: number): number | undefined {
    const until = this.untils[0];
    return until === undefined || until > now ? undefined : until;
  }
  /** Takes the earliest out: its seq. */
  take(): number {
    const seq = this.seqs[0]!;
    const until = this.untils.pop()!;
    const last = this.seqs.pop()!;
    const size = this.untils.length;
    if (size === 0) return seq;
    this.untils[0] = until;
    this.seqs[0] = last;
    for (let i = 0; ; ) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < size && this.before(left, least)) least = left;
      if (right < size && this.before(right, least)) least = right;
      if (least === i) return seq;
      this.swap(i, least);
      i = least;
    }
  }
  private before(a: number, b: number): boolean {
    const untils = this.untils;
    return untils[a]! < untils[b]! || (untils[a] === untils[b] && this.seqs[a]! < this.seqs[b]!);
  }
  private swap(a: number, b: number): void {
    const until = this.untils[a]!;
    this.untils[a] = this.untils[b]!;
    this.untils[b] = until;
    const seq = this.seqs[a]!;
    this.seqs[a] = this.seqs[b]!;
    this.seqs[b] = seq;
  }
}
