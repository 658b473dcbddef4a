/**
 * One JSON line per request: what happened, never who it happened to. Lines carry the site's
 * name, counts, statuses, timings and item ids: no item contents, addresses, hashes, keys or
 * tokens. Node writes them through pino (node/log.ts), Workers with `console.log` for Workers
 * Logs; the field names are the same on both.
 *
 * Every logger scrubs every line it writes ({@link scrubLine}): error text from the SQLite driver, ioredis,
 * `JSON.parse` or the platform can quote what an item held, so no call site has to remember.
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

/** Loggers that scrub every line themselves. */
const scrubs = new WeakSet<Logger>();

/**
 * `logger` with every line scrubbed ({@link scrubLine}) before it sees it; a logger that scrubs
 * already (the relay's own, or one wrapped before) is returned as it is. The relay wraps whatever
 * logger it is given, so an embedder's or a test's logger gets what the relay's own write.
 */
export function scrubbing(logger: Logger, alreadyScrubs = false): Logger {
  if (scrubs.has(logger)) return logger;
  const wrapped: Logger = alreadyScrubs ? logger : (line) => logger(scrubLine(line));
  scrubs.add(wrapped);
  return wrapped;
}

/** A logger writing each line of `level` or above, scrubbed, as one JSON line with `console.log` (Workers Logs, and Node without pino). */
export function createConsoleLogger(level: LogLevel = 'info'): Logger {
  return scrubbing((line) => {
    const lineLevel = line.level ?? 'info';
    if (writes(level, lineLevel)) console.log(JSON.stringify({ ...scrubLine(line), level: lineLevel }));
  }, true);
}

/** The console logger at `info`. */
export const consoleLogger: Logger = createConsoleLogger('info');

/** Discards lines (tests, benchmarks). */
export const silentLogger: Logger = scrubbing(() => {}, true);

/** Characters that end a word for the scrubber: whitespace, quotes and the punctuation around values in messages (all ASCII, marked by code). */
const BREAK = new Uint8Array(128);
for (const c of ' \t\r\n"\'`<>,;()[]{}=|\\') BREAK[c.charCodeAt(0)] = 1;
const isBreak = (c: number) => c < 128 && BREAK[c] === 1;
const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);
const isDigit = (c: number) => c >= 48 && c <= 57;
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isBase64Url = (c: number) => isDigit(c) || isLetter(c) || c === 95 || c === 45;

/** What a word is, when it is something a log line must not hold. */
function classify(word: string): string | undefined {
  if (word.startsWith('rt_') && word.length >= 19) {
    let token = true;
    for (let i = 3; i < word.length && token; i++) token = isBase64Url(word.charCodeAt(i));
    if (token) return '[token]';
  }
  const at = word.indexOf('@');
  if (at > 0) {
    // user@host.tld: a dot after the @, followed by two or more letters to the end (or a trailing dot or colon)
    let end = word.length;
    while (end > at && (word.charCodeAt(end - 1) === 46 || word.charCodeAt(end - 1) === 58)) end--;
    const dot = word.lastIndexOf('.', end - 1);
    if (dot > at + 1 && end - dot > 2) {
      let letters = true;
      for (let i = dot + 1; i < end && letters; i++) letters = isLetter(word.charCodeAt(i));
      if (letters) return '[email]';
    }
  }
  return undefined;
}

/** Replaces runs of 32 or more hex digits (HMACs, SHA-256 hashes) inside `word`. */
function hexRuns(word: string): string {
  // Made only once something is replaced: most words hold nothing to replace.
  let parts: string[] | undefined;
  let kept = 0;
  let start = -1;
  for (let i = 0; i <= word.length; i++) {
    const hex = i < word.length && isHex(word.charCodeAt(i));
    if (hex && start < 0) start = i;
    else if (!hex && start >= 0) {
      if (i - start >= 32) {
        parts ??= [];
        parts.push(word.slice(kept, start), '[hex]');
        kept = i;
      }
      start = -1;
    }
  }
  if (parts === undefined) return word;
  parts.push(word.slice(kept));
  return parts.join('');
}

/** Phone-like runs: digits with `+ - . ( )` and single spaces between, seven digits or more (not an ISO date). */
function phones(text: string): string {
  let parts: string[] | undefined;
  let kept = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (!(isDigit(c) || c === 43 || c === 40)) {
      i++;
      continue;
    }
    // the run: digits and separators; a space only when a digit, "(" or "+" follows
    let end = i;
    let digits = 0;
    for (; end < text.length; end++) {
      const d = text.charCodeAt(end);
      if (isDigit(d)) digits++;
      else if (d === 32) {
        const next = end + 1 < text.length ? text.charCodeAt(end + 1) : 0;
        if (!(isDigit(next) || next === 40 || next === 43)) break;
      } else if (!(d === 43 || d === 45 || d === 46 || d === 40 || d === 41)) break;
    }
    // A run glued to a letter before it is part of a word (an id, a time); an ISO date is not a phone.
    const glued = i > 0 && isLetter(text.charCodeAt(i - 1));
    const date = end - i === 10 && /^\d{4}-\d{2}-\d{2}$/.test(text.slice(i, end));
    if (digits >= 7 && !glued && !date) {
      parts ??= [];
      parts.push(text.slice(kept, i), '[phone]');
      kept = end;
    }
    i = Math.max(end, i + 1);
  }
  if (parts === undefined) return text;
  parts.push(text.slice(kept));
  return parts.join('');
}

/** A time as the relay writes its own (`toISOString`): its date is not a phone and its other digit runs are short, so scrubbing never changes one. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Whether `text` may hold something {@link scrub} replaces: an email has an `@`, a token `rt_`, a
 * hash 32 characters at least and a phone seven digits. A request's line holds a time, a kind, a
 * method, a path and a site's name, none of which can: each is kept after one look at its
 * characters, without the passes over its words and digits.
 */
function mayHold(text: string): boolean {
  if (text.length >= 32 || text.includes('@') || text.includes('rt_')) return true;
  let digits = 0;
  for (let i = 0; i < text.length; i++) if (isDigit(text.charCodeAt(i)) && ++digits === 7) return !ISO_TIME.test(text);
  return false;
}

/**
 * Free text bound for a log line (an error's message or stack, a platform's refusal) with email
 * addresses, long hashes, relay tokens and phone numbers replaced: a message may quote what it
 * refused. One pass over words and one over digits, so the work is linear in the text whatever
 * an attacker put in it (a regex over unbounded runs is not: it can backtrack for minutes).
 */
export function scrub(text: string): string {
  if (!mayHold(text)) return text;
  let parts: string[] | undefined;
  let kept = 0;
  let start = 0;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && !isBreak(text.charCodeAt(i))) continue;
    if (i > start) {
      const word = text.slice(start, i);
      const clean = classify(word) ?? hexRuns(word);
      if (clean !== word) {
        parts ??= [];
        parts.push(text.slice(kept, start), clean);
        kept = i;
      }
    }
    start = i + 1;
  }
  if (parts === undefined) return phones(text);
  parts.push(text.slice(kept));
  return phones(parts.join(''));
}

/**
 * A value bound for a log line with every string in it scrubbed, at any depth (a cause's cause).
 * An array or plain object with nothing to scrub is the value itself (a request's line, almost
 * always); one with something to scrub, or any other object, is a copy.
 */
function scrubValue(value: unknown): unknown {
  if (typeof value === 'string') return scrub(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.some((inner) => !Object.is(scrubValue(inner), inner)) ? value.map(scrubValue) : value;
  const proto: unknown = Object.getPrototypeOf(value);
  if ((proto === Object.prototype || proto === null) && !holdsScrubbed(value as Record<string, unknown>)) return value;
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, scrubValue(inner)]));
}

/** Whether a plain object holds something {@link scrubValue} changes. */
function holdsScrubbed(object: Record<string, unknown>): boolean {
  for (const key in object) if (!Object.is(scrubValue(object[key]), object[key])) return true;
  return false;
}

/** A log line with every string value scrubbed ({@link scrub}): what every logger writes. */
export function scrubLine<T extends object>(line: T): T {
  return scrubValue(line) as T;
}
