/**
 * Runs in Node around each workerd project: when the run ends, closes the platform stand-ins the
 * project's workers were given (upstreams.ts; one per pool worker, started as it starts).
 */
import type { TestProject } from 'vitest/node';
import { closeUpstreams } from './upstreams.js';

export default function setup(project: TestProject) {
  return () => closeUpstreams(project.name);
}
