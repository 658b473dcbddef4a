/**
 * The variables only the Node relay reads, on top of those of `parseConfig`: `RELAY_PLAN` as a
 * file path, the secrets' `_FILE` forms, the ports (`RELAY_METRICS_PORT`, and `PORT` for the
 * CLI), `RELAY_REDIS_UNSAFE` and `RELAY_MAX_CONNECTIONS_PER_ADDRESS`. Each error names its variable.
 * @module
 */
import { readFileSync } from 'node:fs';
import { RelayConfigError } from '../core/errors.js';

/**
 * The Node relay's `RELAY_PLAN` is a file path: returns `env` with the file's text in its place
 * (what `parseConfig` reads). JSON given inline, or no plan, passes unchanged.
 */
export function withPlanFile<E extends Record<string, unknown>>(env: E): E {
  const value = env['RELAY_PLAN'];
  if (typeof value !== 'string' || value.trim() === '' || value.trim().startsWith('{')) return env;
  let text: string;
  try {
    text = readFileSync(value.trim(), 'utf8');
  } catch (cause) {
    throw new RelayConfigError(
      'RELAY_PLAN',
      `cannot read the tracking plan ${value.trim()}: ${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message}`,
      { cause },
    );
  }
  return { ...env, RELAY_PLAN: text };
}

/** The variables that may instead be read from the file `<NAME>_FILE` names, as container platforms mount secrets. */
export const SECRET_VARIABLES = ['CDP_API_KEY', 'RELAY_IDENTITY_SECRET', 'RELAY_REDIS_URL', 'RELAY_TOKENS'] as const;

/**
 * Returns `env` with each secret whose `<NAME>_FILE` is set read from that file (one trailing line
 * break dropped, as `echo` and editors leave one). Setting both `NAME` and `NAME_FILE`, a file that
 * cannot be read and an empty file are errors naming the `_FILE` variable.
 */
export function withSecretFiles<E extends Record<string, unknown>>(env: E): E {
  let read: Record<string, string> | undefined;
  for (const name of SECRET_VARIABLES) {
    const fileVariable = `${name}_FILE`;
    const path = env[fileVariable];
    if (typeof path !== 'string' || path.trim() === '') continue;
    const inline = env[name];
    if (typeof inline === 'string' && inline !== '') throw new RelayConfigError(fileVariable, `both ${name} and ${fileVariable} are set; keep one`);
    let text: string;
    try {
      text = readFileSync(path.trim(), 'utf8');
    } catch (cause) {
      throw new RelayConfigError(fileVariable, `cannot read ${path.trim()}: ${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message}`, { cause });
    }
    const value = text.replace(/\r?\n$/, '');
    if (value.trim() === '') throw new RelayConfigError(fileVariable, `${path.trim()} is empty`);
    read = { ...read, [name]: value };
  }
  return read === undefined ? env : { ...env, ...read };
}

/**
 * A port number from a variable or a flag (`name`, e.g. `PORT` or `--port`): undefined when not
 * given, and an empty variable is not given (a container's `PORT=` falls back to the default
 * rather than to a random port). Anything but a whole number from 0 to 65535 (`8080.5`, `0x50`,
 * `1e3`, an empty flag) is refused, naming `name` and the value.
 */
export function portFrom(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || (!name.startsWith('--') && raw.trim() === '')) return undefined;
  const port = Number(raw.trim());
  if (!/^\d{1,5}$/.test(raw.trim()) || port > 65535) throw new RelayConfigError(name, `must be a port number (0–65535); got ${JSON.stringify(raw)}`);
  return port;
}

/** `RELAY_METRICS_PORT` as a port number; undefined when unset. */
export const metricsPortFrom = (raw: string | undefined): number | undefined => portFrom(raw, 'RELAY_METRICS_PORT');

/** `RELAY_REDIS_UNSAFE`: `on` starts on a Redis that can lose accepted items; `off` (the default) refuses it. */
export function redisUnsafe(raw: string | undefined): boolean {
  const value = raw?.trim().toLowerCase() || 'off';
  if (value !== 'on' && value !== 'off') throw new RelayConfigError('RELAY_REDIS_UNSAFE', `must be "on" or "off"; got ${JSON.stringify(raw)}`);
  return value === 'on';
}

/** Connections one visitor address may hold open: a browser opens a handful; many visitors may share one address (NAT). */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 128;

/** `RELAY_MAX_CONNECTIONS_PER_ADDRESS` as a whole number ≥ 1. */
export function connectionsPerAddress(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return DEFAULT_MAX_CONNECTIONS_PER_ADDRESS;
  const count = Number(raw);
  if (!Number.isInteger(count) || count < 1)
    throw new RelayConfigError('RELAY_MAX_CONNECTIONS_PER_ADDRESS', `must be a whole number ≥ 1; got ${JSON.stringify(raw)}`);
  return count;
}
