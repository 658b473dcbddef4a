/**
 * The operations port of the relay on Node: `GET /metrics` (Prometheus), `GET /status` (the
 * status page), `GET /status.json`, `/healthz` and `/readyz`, on loopback by default. Nothing on
 * it needs a token: keep it off the public network (bind it to loopback or a private address).
 * @module
 */
import { getRequestListener } from '@hono/node-server';
import { Hono } from 'hono';
import { listen } from '../../listen.js';
import type { MetricsSource } from './metrics.js';
import type { Readiness } from './ready.js';
import { renderStatusPage, type StatusSnapshot } from './status.js';

export interface OpsServerOptions {
  /** 0 picks a free port */
  port: number;
  /** @default '127.0.0.1' */
  hostname?: string;
  metrics: MetricsSource;
  status: () => StatusSnapshot;
  readiness?: Readiness;
}

export interface OpsServer {
  url: string;
  close(): Promise<void>;
}

export function createOpsApp(options: Omit<OpsServerOptions, 'port' | 'hostname'>): Hono {
  const app = new Hono();
  app.use('*', async (c, next) => {
    await next();
    c.res.headers.set('Cache-Control', 'no-store');
  });
  app.get('/metrics', async (c) => {
    const { contentType, body } = await options.metrics.render();
    return c.body(body, 200, { 'Content-Type': contentType });
  });
  app.get('/status', async (c) => c.html(await renderStatusPage(options.status())));
  app.get('/status.json', (c) => c.json(options.status()));
  app.get('/healthz', (c) => c.json({ ok: true }));
  const readiness = options.readiness;
  if (readiness !== undefined) {
    app.get('/readyz', async (c) => {
      const state = await readiness.check();
      return c.json(state, state.ready ? 200 : 503);
    });
  }
  app.get('/', (c) => c.redirect('/status'));
  return app;
}

/** Starts the operations server; resolves once it listens. */
export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const { url, close } = await listen(getRequestListener(createOpsApp(options).fetch), options.port, options.hostname ?? '127.0.0.1');
  return { url, close };
}
