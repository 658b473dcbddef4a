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
  const handling = new Set<Promise<unknown>>();
  return {
    track:
      (handle) =>
      (...args) => {
        const answer = handle(...args);
        handling.add(answer);
        const forget = () => void handling.delete(answer);
        answer.then(forget, forget);
        return answer;
      },
    drain: async () => {
      while (handling.size > 0) await Promise.allSettled([...handling]);
    },
  };
}
