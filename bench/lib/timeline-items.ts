/**
 * Items as /collect accepts them, for the diagnoses that feed the outbox directly (pace-timeline,
 * call-commits): item `n` of a stream from 500 browsers in turn, 7% of them identifies. Each
 * visitor's 14 items begin with its identify, then a new visitor takes the browser's place.
 */
import type { OutboxItem } from '../../src/relay/state/outbox.js';

/** Item `n` of the stream, accepted at `now`; its tracks are of activity `activity` (defined at the platform). */
export const timelineItem =
  (activity: string) =>
  (n: number, now: number): OutboxItem => {
    const turn = Math.floor(n / 500);
    const visitor = (n % 500) + 500 * Math.floor(turn / 14);
    const email = `v${visitor}@bench.example.com`;
    const base = { site: 'pk_bench', id: crypto.randomUUID(), browser: `b${visitor}`, visitor: `10.0.${visitor & 255}`, accepted: now };
    if (turn % 14 === 0) return { ...base, kind: 'merge', entry: { fields: { 'str::email': email } } };
    return { ...base, kind: 'activity', entry: { activity_id: `act:cm:${activity}`, fields: { 'str::email': email }, attributes: { 'str:cm:item': base.id } } };
  };
