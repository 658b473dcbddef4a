/**
 * The ingest requests being handled (POST /collect and the server door): a graceful stop waits
 * for them to settle in the store before closing it.
 * @module
 */

export interface InFlight {
  /** `handle`, with each of its answers counted until it settles */
  track<A extends unknown[], R>(handle: (...args: A) => Promise<R>): (...args: A) => Promise<R>;
  /** resolves when no tracked request is being handled */
  drain(): Promise<void>;
}

export function createInFlight(): InFlight {
  let handling = 0;
  /** what `drain` calls waiting for the last tracked request to settle */
  let waiting: (() => void)[] = [];
  // One function for every request's settling, not a closure each.
  const settled = () => {
    handling--;
    if (handling > 0) return;
    const drained = waiting;
    waiting = [];
    for (const resolve of drained) resolve();
  };
  return {
    track:
      (handle) =>
      (...args) => {
        const answer = handle(...args);
        handling++;
        answer.then(settled, settled);
        return answer;
      },
    drain: () => (handling === 0 ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve))),
  };
}
