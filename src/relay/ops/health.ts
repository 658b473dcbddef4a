/**
 * The relay port's health routes: `GET /healthz` (the process answers), `GET /readyz` (the store
 * answers and the platform did lately, or a probe does: ready or not, why goes to the log) and,
 * when the runtime gives a metrics source, `GET /metrics` for tokens with the `metrics` scope.
 * @module
 */
import { Hono } from 'hono';
import { relayError } from '../../api/index.js';
import { authenticate } from '../core/auth.js';
import { createTokenVerifier, type TokenConfig } from '../core/tokens.js';
import type { MetricsSource } from './metrics.js';
import { publicState, type Readiness } from './ready.js';

export function createHealthRoutes(options: { readiness: Readiness; metrics: MetricsSource | undefined; tokens: TokenConfig[] }): Hono {
  const { readiness, metrics } = options;
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', async (c) => {
    const state = await readiness.check();
    return c.json(publicState(state), state.ready ? 200 : 503);
  });
  if (metrics !== undefined) {
    const verify = createTokenVerifier(options.tokens);
    app.get('/metrics', async (c) => {
      const token = authenticate(c.req.header('authorization'), verify);
      if (!token.scopes.includes('metrics') && !token.scopes.includes('admin')) {
        return c.json(relayError('forbidden', `token "${token.name}" lacks the metrics scope`), 403);
      }
      const { contentType, body } = await metrics.render();
      return c.body(body, 200, { 'Content-Type': contentType });
    });
  }
  return app;
}
