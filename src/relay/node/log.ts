/**
 * The relay's log lines on Node, through pino: the same JSON fields as on Workers, written
 * asynchronously (off the request's path) and flushed when the process exits.
 * @module
 */
import pino, { type DestinationStream } from 'pino';
import type { LogLevel } from '../core/config.js';
import { scrubbing, scrubLine, silentLogger, type Logger } from '../core/logging.js';

/** A logger writing lines of `level` and above, scrubbed, to `destination` @default stdout, asynchronously */
export function createPinoLogger(level: LogLevel, destination?: DestinationStream): Logger {
  if (level === 'off') return silentLogger;
  const log = pino(
    { level, base: null, timestamp: false, formatters: { level: (label) => ({ level: label }) } },
    destination ?? pino.destination({ dest: 1, sync: false }),
  );
  return scrubbing((line) => {
    const lineLevel = line.level ?? 'info';
    if (!log.isLevelEnabled(lineLevel)) return;
    // pino writes the level itself: a request's line has none of its own (most lines) and goes as it is, not copied without it.
    if (line.level === undefined) return void log.info(scrubLine(line));
    const { level, ...rest } = line;
    log[lineLevel](scrubLine(rest));
  }, true);
}
