import type { Command } from '../cli.js';

const dev: Command = {
  summary: 'start emulator, relay and demo site on loopback',
  async run() {
    console.log('cdp-edge dev will start, on loopback:');
    console.log('  - the emulator (the platform API, run locally)');
    console.log('  - the relay, pointed at the emulator');
    console.log('  - the demo site');
    console.log('The emulator and relay are being built; see README.md for the plan.');
    return 0;
  },
};
export default dev;
