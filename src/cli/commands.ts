// The command table: one line per command, each module loaded only when it runs.
import type { Command } from './command.js';

export interface CommandEntry {
  summary: string;
  load: () => Promise<Command>;
}

export const COMMANDS: Readonly<Record<string, CommandEntry>> = {
  dev: { summary: 'start emulator, relay and demo site on loopback (what `npm start` runs)', load: async () => (await import('./dev.js')).default },
  relay: {
    summary: 'run the relay on Node (POST /collect, the /v1 proxy, /cdp.js), configured by environment',
    load: async () => (await import('./relay.js')).default,
  },
  outbox: {
    summary: "the relay outbox's dead letters: list them, retry or drop them (same state as the relay)",
    load: async () => (await import('./outbox.js')).default,
  },
  erase: {
    summary: 'erase one person at a deployed relay: their waiting items and dead letters, suppressed from then on, deleted on the platform',
    load: async () => (await import('./erase.js')).default,
  },
  token: { summary: 'create a relay proxy token: printed once, with its RELAY_TOKENS entry', load: async () => (await import('./token.js')).default },
  plan: {
    summary: 'the tracking plan: check, diff, push it to the platform, generate types for track()',
    load: async () => (await import('./plan.js')).default,
  },
  emulator: { summary: 'run the platform API locally (all 29 endpoints, dashboard at /)', load: async () => (await import('./emulator.js')).default },
};
