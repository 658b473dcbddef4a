// The command table: one line per command, each module loaded on demand.
import { register } from '../cli.js';

register('dev', 'start emulator, relay and demo site on loopback (what `npm start` runs)', async () => (await import('./dev.js')).default);
