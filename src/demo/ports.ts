/**
 * Binding a port for `cdp-edge dev`: a port the user chose must be free (else an error naming
 * the flag); a default port that is taken moves on to the next free one, and says so.
 * @module
 */

/** Where a server should listen: the port, and whether the user asked for it by a flag. */
export interface PortChoice {
  port: number;
  /** the flag that chose it, e.g. `--relay-port`; absent for a default */
  flag?: string;
}

/** A port the user chose is in use (or could not be bound). */
export class PortTakenError extends Error {
  override name = 'PortTakenError' as const;
  constructor(
    readonly flag: string,
    readonly port: number,
    options?: { cause?: unknown },
  ) {
    super(`${flag} ${port} is already in use; stop what runs there, pick another port, or pass ${flag} 0 for any free port`, options);
  }
}

/** How many ports after a taken default are tried before giving up. */
const TRIES = 20;

const inUse = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE';

/**
 * Calls `start(port)` for the chosen port; for a default that is taken, for the next ports
 * (at most 20). Resolves to what `start` gave and a note when the port moved.
 * @example
 * const { value, moved } = await listenOn({ port: 8080 }, 'demo', (port) => startDemo({ port }));
 */
export async function listenOn<T>(choice: PortChoice, what: string, start: (port: number) => Promise<T>): Promise<{ value: T; moved?: string }> {
  const explicit = choice.flag !== undefined || choice.port === 0;
  for (let i = 0; i < (explicit ? 1 : TRIES); i++) {
    try {
      const value = await start(choice.port + i);
      return i === 0 ? { value } : { value, moved: `port ${choice.port} is taken, so the ${what} uses ${choice.port + i}` };
    } catch (error) {
      if (!inUse(error)) throw error;
      if (choice.flag !== undefined) throw new PortTakenError(choice.flag, choice.port, { cause: error });
    }
  }
  throw new Error(`ports ${choice.port}–${choice.port + TRIES - 1} are all taken; choose a port for the ${what} with its --*-port flag (0 = any free port)`);
}
