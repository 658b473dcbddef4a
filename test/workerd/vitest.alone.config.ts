/**
 * The workerd files that run each in a Miniflare of its own (ALONE in vitest.config.ts, which says
 * why); every other workerd file shares one per pool worker.
 */
import { ALONE, workerdProject } from './vitest.config.js';

export default workerdProject('workerd-alone', { isolate: true, include: ALONE });
