/**
 * What the platform saw, per endpoint: how many calls, how each was answered, and how many
 * entries (people, activities) the applied ones carried. The delivery bench reads it at
 * `GET /_emulator/calls` for entries per call and the share of calls answered 429.
 * @module
 */

export interface EndpointCalls {
  /** calls to the endpoint, whatever the answer */
  calls: number;
  /** calls by the status they were answered with, e.g. `{"200": 12, "429": 3}` */
  statuses: Record<string, number>;
  /** items (people, activities, …) in the calls answered 2xx; batch endpoints only */
  entries: number;
}

export type CallCounts = Record<string, EndpointCalls>;

export interface CallLog {
  record(endpoint: string, status: number, entries: number): void;
  counts(): CallCounts;
  clear(): void;
}

export function createCallLog(): CallLog {
  let counts: CallCounts = {};
  return {
    record(endpoint, status, entries) {
      counts[endpoint] ??= { calls: 0, statuses: {}, entries: 0 };
      const row = counts[endpoint];
      row.calls++;
      row.statuses[status] = (row.statuses[status] ?? 0) + 1;
      if (status >= 200 && status < 300) row.entries += entries;
    },
    counts: () => structuredClone(counts),
    clear() {
      counts = {};
    },
  };
}
