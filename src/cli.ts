/**
 * `cdp-edge dev | relay | emulator | token | plan | outbox`: the command line. Each command lives in
 * `cli/<name>.ts` and is loaded only when used.
 * @module
 */

import { COMMANDS } from './cli/commands.js';

function usage(): string {
  const lines = Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(10)} ${summary}`);
  return ['Usage: cdp-edge <command> [options]', '', 'Commands:', ...lines, '', 'Run `cdp-edge <command> --help` for its options.'].join('\n');
}

/** Runs the CLI with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return 0;
  }
  const entry = COMMANDS[name];
  if (!entry) {
    console.error(`cdp-edge: unknown command ${JSON.stringify(name)}\n\n${usage()}`);
    return 2;
  }
  const command = await entry.load();
  return command.run(rest);
}
