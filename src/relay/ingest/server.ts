/**
 * `POST /server/collect`, the server door: the /collect batch (without `key`) from a server holding
 * a relay token with the `collect` scope (`Authorization: Bearer`), taken through the same item
 * checks, window, hand-off and delivery as the browsers' (collect.ts `collectItems`). No site key,
 * origin, visitor limit or identity proof is involved: the token names the sender, and its server
 * vouches for every person it names (identity-rules.ts `vouchedRulings`). Its items are kept as
 * those of the token's own site (core/sites.ts `serverSite`), so the same id from any instance of
 * that server, within the window, lands once.
 * @module
 */
import { SERVER_COLLECT_PATH } from '../../api/collect.js';
import { authenticate } from '../core/auth.js';
import { RelayHttpError } from '../core/errors.js';
import { serverSite } from '../core/sites.js';
import type { TokenConfig } from '../core/tokens.js';
import { readCollectBody, type CollectRequest } from './body.js';
import { collectItems } from './collect.js';
import type { CollectContext, CollectOutcome } from './context.js';

/** Whether `token` may send through the server door: the `collect` scope, or `admin`. */
export const mayCollect = (token: TokenConfig): boolean => token.scopes.includes('collect') || token.scopes.includes('admin');

/** Handles one server door request; throws {@link RelayHttpError} for whole-request failures (401, 403, 400, 413, 415). */
export async function collectFromServer(
  ctx: CollectContext,
  verify: (token: string) => TokenConfig | undefined,
  request: CollectRequest,
  named: { site?: string } = {},
): Promise<CollectOutcome> {
  const started = ctx.clock.now();
  const token = authenticate(request.authorization, verify);
  if (!mayCollect(token)) {
    throw new RelayHttpError(
      403,
      'forbidden',
      `token ${JSON.stringify(token.name)} lacks the collect scope that ${SERVER_COLLECT_PATH} needs (it has ${token.scopes.join(', ')})`,
    );
  }
  const site = serverSite(token.name);
  named.site = site.name;
  const body = await readCollectBody(request, { keyed: false });
  // One ordered stream per token unless the server names its own (identifies before its tracks).
  body.queue ??= site.key;
  // No client address: the connection is the server's, not its visitor's; an item tells its own in `location.source_ip`.
  return collectItems(ctx, site, body, {}, { visitor: undefined, started, guardMs: 0, vouched: true });
}
