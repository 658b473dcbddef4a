// The command table: one line per command, each module loaded on demand.
import { register } from '../cli.js';

register('dev', 'start emulator, relay and demo site on loopback (what `npm start` runs)', async () => (await import('./dev.js')).default);
register('relay', 'run the relay on Node (POST /collect, the /v1 proxy, /cdp.js), configured by environment', async () => (await import('./relay.js')).default);
register('token', 'create a relay proxy token: printed once, with its RELAY_TOKENS entry', async () => (await import('./token.js')).default);
register('emulator', 'run the platform API locally (all 29 endpoints, dashboard at /)', async () => (await import('./emulator.js')).default);
