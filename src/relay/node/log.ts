/**
 * The relay's log lines on Node: the same JSON fields as on Workers, one line each, written
 * asynchronously through pino's destination (off the request's path) and flushed when the process
 * exits.
 *
 * On stdout, lines are gathered before they are written ({@link LINES_GATHERED}): an asynchronous
 * write is a trip to libuv's thread pool and back, one more turn of the event loop, and below
 * saturation every request's line made its own (bench/README, "What an item costs below
 * saturation"). A line waits at most {@link LINE_WAIT_MS}.
 * @module
 */
import pino, { type DestinationStream } from 'pino';
import type { LogLevel } from '../core/config.js';
import { scrubbing, scrubLine, silentLogger, writes, type Logger } from '../core/logging.js';

/** Bytes of lines gathered on stdout before they are written together: about 45 request lines. */
export const LINES_GATHERED = 8192;
/** The longest a line waits on stdout for others to be written with. */
export const LINE_WAIT_MS = 100;

/**
 * `dest` (a file descriptor, stdout by default, or a file's path) as pino's asynchronous
 * destination, written once {@link LINES_GATHERED} bytes wait or the first of them has waited
 * {@link LINE_WAIT_MS}; at exit pino writes what waits synchronously. What {@link createPinoLogger}
 * writes to unless given another destination.
 */
export function gatheredLines(dest: number | string = 1): DestinationStream {
  // Lines kept as bytes (`contentMode: 'buffer'`): kept as text, each line joined the text that
  // waits, and sonic-boom measures that text's UTF-8 length at every line, which makes V8 copy it
  // whole into one string each time (about half of LINES_GATHERED, allocated a line).
  const stdout = pino.destination({ dest, sync: false, minLength: LINES_GATHERED, contentMode: 'buffer' });
  // Bytes given and not yet written: a flush while a write is under way writes nothing, so what
  // is left once it ends is flushed by the next timer, armed when the write ends.
  let waiting = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    if (waiting > 0) stdout.flush();
  };
  // It does not keep the process alive: the exit writes what waits.
  const arm = () => {
    if (timer === undefined) timer = setTimeout(flush, LINE_WAIT_MS).unref();
  };
  stdout.on('write', (bytes: number) => {
    waiting -= bytes;
  });
  stdout.on('drain', () => {
    if (waiting > 0) arm();
  });
  return {
    write(line: string) {
      const bytes = Buffer.from(line);
      waiting += bytes.length;
      // sonic-boom's types know text alone; in its buffer mode it takes bytes.
      const room = stdout.write(bytes as unknown as string);
      arm();
      return room;
    },
  } as DestinationStream;
}

/**
 * A logger writing lines of `level` and above, scrubbed, to `destination` @default stdout, asynchronously, lines gathered ({@link gatheredLines}).
 * Each line is `{"level":…}` then the line's own fields, as a pino logger wrote them, but made by
 * `JSON.stringify` (a pino logger's own serialiser cost more a line, bench/README "The log line
 * without a pino logger"). A destination gets each line's text and nothing beside it (pino's
 * multistream, which routes by the level a pino logger tells it, is not one); pino's own
 * destinations write what waits at exit.
 */
export function createPinoLogger(level: LogLevel, destination?: DestinationStream): Logger {
  if (level === 'off') return silentLogger;
  const out = destination ?? gatheredLines();
  return scrubbing((line) => {
    const lineLevel = line.level ?? 'info';
    if (!writes(level, lineLevel)) return;
    out.write(`${JSON.stringify({ level: lineLevel, ...scrubLine(line) })}\n`);
  }, true);
}
