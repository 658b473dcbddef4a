// Runs the CLI from source (what bin/cdp-edge.js runs from dist), so CLI tests need no build.
import { main } from '../../../src/cli.js';

process.exitCode = await main(process.argv.slice(2));
