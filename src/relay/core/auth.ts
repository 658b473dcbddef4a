/** Who is calling: `Authorization: Bearer <token>` checked against the configured hashes. */
import type { Endpoint, EndpointId } from '../../api/index.js';
import { tokenAllows, type TokenConfig } from './tokens.js';
import { RelayHttpError } from './errors.js';

const CHALLENGE = { 'www-authenticate': 'Bearer realm="cdp-edge relay"' };
/** Longer than any token `cdp-edge token create` makes; not worth hashing. */
const MAX_TOKEN_CHARS = 512;

/** The configured token presented in `header` (the request's `Authorization`), or a 401 {@link RelayHttpError}. */
export function authenticate(header: string | null | undefined, verify: (token: string) => TokenConfig | undefined): TokenConfig {
  const match = header === null || header === undefined ? null : /^Bearer +(\S+) *$/i.exec(header);
  if (match?.[1] === undefined) {
    throw new RelayHttpError(401, 'missing_token', 'send the relay token as `Authorization: Bearer <token>` (create one with `cdp-edge token create`)', {
      headers: CHALLENGE,
    });
  }
  const token = match[1].length <= MAX_TOKEN_CHARS ? verify(match[1]) : undefined;
  if (token === undefined) {
    throw new RelayHttpError(401, 'invalid_token', 'the bearer token is not one of RELAY_TOKENS (revoked, mistyped, or from another relay)', {
      headers: CHALLENGE,
    });
  }
  return token;
}

/** Throws a 403 {@link RelayHttpError} unless `token` may call `endpoint`. */
export function authorize(token: TokenConfig, endpoint: Endpoint<EndpointId>): void {
  if (tokenAllows(token, endpoint.id)) return;
  const limited = token.endpoints !== undefined && !token.endpoints.includes(endpoint.id);
  const why = limited
    ? `token ${JSON.stringify(token.name)} is limited to ${token.endpoints?.join(', ')} and may not call ${endpoint.id}`
    : `token ${JSON.stringify(token.name)} lacks the ${endpoint.scope} scope that ${endpoint.id} needs (it has ${token.scopes.join(', ')})`;
  throw new RelayHttpError(403, 'forbidden', why);
}
