/**
 * One JSON line per request: what happened, never who it happened to. Lines carry the
 * site's name, counts, statuses and timings — no item contents, addresses, hashes or keys.
 * @module
 */

export interface LogLine {
  /** ISO time the request arrived */
  ts: string;
  method: string;
  path: string;
  status: number;
  ms: number;
  site?: string;
  items?: number;
  /** count per result status: `{accepted: 3, duplicate: 1}` */
  results?: Record<string, number>;
  /** statuses the platform answered, in order (0 = no answer) */
  upstream?: number[];
  /** a short error code when the request failed as a whole */
  error?: string;
  [key: string]: unknown;
}

export type Logger = (line: LogLine) => void;

/** Writes each line as JSON to stdout (Workers Logs and Node alike). */
export const consoleLogger: Logger = (line) => console.log(JSON.stringify(line));

/** Discards lines (tests, benchmarks). */
export const silentLogger: Logger = () => {};
