/**
 * Metrics and the status page when `cdp-edge relay --workers N` runs N processes: each worker
 * keeps its own registry and status events; the primary serves the metrics port, asking every
 * worker for its figures on each scrape and summing them (prom-client's aggregation: counters
 * summed, the store gauges by maximum), and recording the status events the workers send it
 * each second. A scrape never waits on a slow worker for more than {@link WORKER_ANSWER_MS}: a
 * worker that has not answered by then counts with its last answer (so counters never drop while
 * it lives), and the scrape says so (`cdp_edge_metrics_workers_missing` and a comment line each).
 * @module
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Gauge, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import type { CollectEvent, RelayObserver } from '../core/observe.js';
import { startOpsServer, type OpsServer } from './server.js';
import { createStatusRecorder } from './status.js';

const MESSAGE = 'cdp-edge:status-events';
const SEND_EVERY_MS = 1_000;
const METRICS_REQUEST = 'cdp-edge:metrics-request';
const METRICS_ANSWER = 'cdp-edge:metrics-answer';

/** How long a scrape of the primary waits for the workers' figures (Prometheus's own scrape timeout is 10 s by default). */
export const WORKER_ANSWER_MS = 2_000;

type Figures = MetricObjectWithValues<MetricValue<string>>[];

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
  process.on('message', (message: { type?: string; id?: number }) => {
    if (message?.type !== METRICS_REQUEST) return;
    const answer = (body: { metrics: Figures } | { error: string }) => {
      if (process.connected) process.send?.({ type: METRICS_ANSWER, id: message.id, ...body });
    };
    registry.getMetricsAsJSON().then(
      (metrics) => answer({ metrics }),
      (error: unknown) => answer({ error: error instanceof Error ? error.message : String(error) }),
    );
  });
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

/**
 * In the primary: each scrape asks every connected worker for its figures and waits for all of
 * them, or `timeoutMs`; a worker that did not answer in time counts with its last answer, if it
 * ever gave one. The text says which workers did not answer.
 */
export function clusterScrape(timeoutMs = WORKER_ANSWER_MS): () => Promise<{ contentType: string; body: string }> {
  const last = new Map<number, { figures: Figures; at: number }>();
  const waiting = new Map<number, (worker: Worker, failure?: string) => void>();
  let next = 0;
  cluster.on('message', (worker, message: { type?: string; id?: number; metrics?: Figures; error?: string }) => {
    if (message?.type !== METRICS_ANSWER) return;
    if (Array.isArray(message.metrics)) last.set(worker.id, { figures: message.metrics, at: Date.now() });
    waiting.get(message.id ?? -1)?.(worker, message.error);
  });
  // A replaced worker's figures go with it (a real restart of its counters).
  cluster.on('exit', (worker) => last.delete(worker.id));

  return async () => {
    const id = next++;
    const asked = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker?.isConnected() === true);
    const pending = new Set(asked.map((worker) => worker.id));
    const failed = new Map<number, string>();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      const settle = () => {
        if (pending.size > 0) return;
        clearTimeout(timer);
        resolve();
      };
      waiting.set(id, (worker, failure) => {
        if (!pending.delete(worker.id)) return;
        if (failure !== undefined) failed.set(worker.id, failure.replace(/\s+/g, ' '));
        settle();
      });
      for (const worker of asked) {
        try {
          worker.send({ type: METRICS_REQUEST, id });
        } catch {
          // it disconnected since: it stays pending
        }
      }
      settle();
    });
    waiting.delete(id);
    const figures = asked.flatMap((worker) => {
      const known = last.get(worker.id);
      return known ? [known.figures] : [];
    });
    const registry = AggregatorRegistry.aggregate(figures);
    new Gauge({
      name: 'cdp_edge_metrics_workers_missing',
      help: 'Relay workers that did not answer this scrape in time: their figures are their last answer, or absent if they never answered',
      registers: [registry],
    }).set(pending.size + failed.size);
    const notes = asked
      .filter((worker) => pending.has(worker.id) || failed.has(worker.id))
      .map((worker) => {
        const known = last.get(worker.id);
        const why = failed.has(worker.id) ? `answered with an error (${failed.get(worker.id)})` : `did not answer within ${timeoutMs} ms`;
        const figures = known ? `its figures here are from ${((Date.now() - known.at) / 1000).toFixed(1)} s ago` : 'none of its figures are here';
        return `# cdp-edge: worker ${worker.id} (pid ${worker.process.pid}) ${why}; ${figures}\n`;
      });
    return { contentType: registry.contentType, body: notes.join('') + (await registry.metrics()) };
  };
}

/** In the primary: the metrics port for every worker. */
export async function startClusterOps(options: { port: number; hostname?: string; workerTimeoutMs?: number }): Promise<OpsServer> {
  const status = createStatusRecorder();
  cluster.on('message', (_worker, message: { type?: string; events?: Reported[] }) => {
    if (message?.type !== MESSAGE || !Array.isArray(message.events)) return;
    for (const { event, count } of message.events) status.record(event, count);
  });
  return startOpsServer({
    port: options.port,
    ...(options.hostname === undefined ? {} : { hostname: options.hostname }),
    metrics: { render: clusterScrape(options.workerTimeoutMs) },
    status: status.snapshot,
  });
}
