/**
 * `on(event, fn)`: the tracker's events for the page's own code. A listener that throws never
 * stops the tracker or the other listeners.
 * @module
 */
import type { TrackerEvents } from './types.js';

export type Emit = <E extends keyof TrackerEvents>(event: E, payload: TrackerEvents[E]) => void;

export function createEvents() {
  const listeners: { [E in keyof TrackerEvents]?: Set<(payload: TrackerEvents[E]) => void> } = {};
  const emit: Emit = (event, payload) =>
    listeners[event]?.forEach((listener) => {
      try {
        listener(payload);
      } catch {}
    });
  const on = <E extends keyof TrackerEvents>(event: E, listener: (payload: TrackerEvents[E]) => void) => {
    listeners[event] ??= new Set() as never;
    listeners[event]!.add(listener);
    return (): unknown => listeners[event]!.delete(listener);
  };
  return { emit, on };
}
