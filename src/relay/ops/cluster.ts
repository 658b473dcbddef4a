/**
 * Metrics and the status page when `cdp-edge relay --workers N` runs N processes: each worker
 * keeps its own registry and status events; the primary serves the metrics port, asking every
 * worker for its metrics on each scrape (prom-client's AggregatorRegistry: counters summed, the
 * store gauges by maximum) and recording the status events the workers send it each second.
 * @module
 */
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { CollectEvent, RelayObserver } from '../core/observe.js';
import { startOpsServer, type OpsServer } from './server.js';
import { createStatusRecorder } from './status.js';

const MESSAGE = 'cdp-edge:status-events';
const SEND_EVERY_MS = 1_000;

/** What a worker sends: the event with only its rejected items, and how many items it had. */
interface Reported {
  event: CollectEvent;
  count: number;
}

/**
 * In a worker: answers the primary's metric requests from `registry`, and returns an observer
 * that sends /collect events to the primary once a second.
 */
export function reportToPrimary(registry: Registry): RelayObserver {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs the worker's answer to the primary's requests.
  new AggregatorRegistry();
  let pending: Reported[] = [];
  let scheduled = false;
  const send = (): void => {
    scheduled = false;
    const events = pending;
    pending = [];
    if (process.connected) process.send?.({ type: MESSAGE, events });
  };
  return {
    collect(event) {
      pending.push({ event: { ...event, items: event.items.filter((item) => item.status === 'rejected') }, count: event.items.length });
      if (scheduled) return;
      scheduled = true;
      setTimeout(send, SEND_EVERY_MS).unref();
    },
  };
}

/** In the primary: the metrics port for every worker. */
export async function startClusterOps(options: { port: number; hostname?: string }): Promise<OpsServer> {
  const registry = new AggregatorRegistry();
  const status = createStatusRecorder();
  cluster.on('message', (_worker, message: { type?: string; events?: Reported[] }) => {
    if (message?.type !== MESSAGE || !Array.isArray(message.events)) return;
    for (const { event, count } of message.events) status.record(event, count);
  });
  return startOpsServer({
    port: options.port,
    ...(options.hostname === undefined ? {} : { hostname: options.hostname }),
    metrics: { render: async () => ({ contentType: registry.contentType, body: await registry.clusterMetrics() }) },
    status: status.snapshot,
  });
}
