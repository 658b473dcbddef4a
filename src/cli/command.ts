/**
 * What each `cdp-edge <command>` module exports by default.
 * @module
 */
export interface Command {
  run(argv: string[]): Promise<number>;
}
