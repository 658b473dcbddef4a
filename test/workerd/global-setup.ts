/**
 * Runs in Node around the workerd project: when the run ends, closes the platform stand-ins the
 * project's files were given (upstreams.ts; one per file, started as each file's worker starts).
 */
import { closeUpstreams } from './upstreams.js';

export default function setup() {
  return closeUpstreams;
}
