/**
 * One JSON line per request: what happened, never who it happened to. Lines carry the site's
 * name, counts, statuses, timings and item ids: no item contents, addresses, hashes, keys or
 * tokens. Node writes them through pino (node-log.ts), Workers with `console.log` for Workers
 * Logs; the field names are the same on both.
 * @module
 */
import type { LogLevel } from './config.js';

export interface LogLine {
  /** `info` for a request's line, `debug` for a line per item, `error` for an unexpected failure @default 'info' */
  level?: 'debug' | 'info' | 'warn' | 'error';
  /** ISO time the request arrived */
  ts: string;
  /** `collect`, `proxy`, `http`, `item` or `error` */
  kind?: string;
  method: string;
  path: string;
  status: number;
  ms: number;
  site?: string | undefined;
  items?: number;
  /** count per result status: `{accepted: 3, duplicate: 1}` */
  results?: Record<string, number>;
  /** count per rejection class: `{invalid: 1, not_allowed: 2}` */
  reasons?: Record<string, number>;
  /** statuses the platform answered, in order (0 = no answer) */
  upstream?: number[];
  /** a short error code when the request failed as a whole */
  error?: string;
  [key: string]: unknown;
}

export type Logger = (line: LogLine) => void;

const RANK = { debug: 10, info: 20, warn: 30, error: 40 } as const;

/** Whether a logger at `level` writes lines of `lineLevel`. */
export const writes = (level: LogLevel, lineLevel: keyof typeof RANK): boolean => level !== 'off' && RANK[lineLevel] >= RANK[level];

/** A logger writing each line of `level` or above as one JSON line with `console.log` (Workers Logs, and Node without pino). */
export function createConsoleLogger(level: LogLevel = 'info'): Logger {
  return (line) => {
    const lineLevel = line.level ?? 'info';
    if (writes(level, lineLevel)) console.log(JSON.stringify({ ...line, level: lineLevel }));
  };
}

/** The console logger at `info`. */
export const consoleLogger: Logger = createConsoleLogger('info');

/** Discards lines (tests, benchmarks). */
export const silentLogger: Logger = () => {};

const EMAIL = /[^\s"'<>@,;:()[\]]+@[^\s"'<>@,;:()[\]]+\.[A-Za-z]{2,}/g;
// HMACs, SHA-256 hashes and relay tokens: long runs of hex or base64url.
const HEX = /\b[0-9a-fA-F]{32,}\b/g;
const TOKEN = /\brt_[A-Za-z0-9_-]{16,}/g;

/**
 * Free text bound for a log line (an error's message or stack, a platform's refusal) with email
 * addresses, long hashes and relay tokens replaced: a message may quote what it refused.
 */
export function scrub(text: string): string {
  return text.replace(EMAIL, '[email]').replace(TOKEN, '[token]').replace(HEX, '[hex]');
}
