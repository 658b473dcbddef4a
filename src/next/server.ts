/**
 * The `user_hash` of a signed-in visitor, made on the server (a Server Component, a route
 * handler, a Server Action) from `RELAY_IDENTITY_SECRET`: the relay's own `identityHash`, one hash
 * per identifier the person names. Server only: the secret must never reach a browser bundle.
 *
 * @example
 * // app/layout.jsx (a Server Component)
 * const user = session ? { 'str::email': session.email } : null;
 * const userHash = user && (await userHashFor(user));
 * // … <Identify user={user} userHash={userHash} /> (a client component calling useIdentify)
 * @module
 */
import { DEFAULT_PERSON_MERGE_BY } from '../api/fields.js';
import { identityHash } from '../relay/ingest/identity.js';

/**
 * `{ field: hash }` for each identifier of `user` with a value (the relay's default `merge_by`:
 * `str::email`, `str::ei`), under `secret` (default: `process.env.RELAY_IDENTITY_SECRET`). Other
 * fields are not signed. Pass the result as `useIdentify(user, userHash)`'s proof.
 */
export async function userHashFor(
  user: Readonly<Record<string, unknown>>,
  secret = globalThis.process?.env?.['RELAY_IDENTITY_SECRET'],
  identifiers: readonly string[] = DEFAULT_PERSON_MERGE_BY,
): Promise<Record<string, string>> {
  if (!secret) throw new Error('userHashFor: RELAY_IDENTITY_SECRET is not set (the same secret as the relay)');
  const hashes: Record<string, string> = {};
  for (const field of identifiers) {
    const value = user[field];
    if (typeof value === 'string' && value !== '') hashes[field] = await identityHash(secret, field, value);
  }
  if (!Object.keys(hashes).length) throw new TypeError(`userHashFor: the user names no identifier (${identifiers.join(', ')})`);
  return hashes;
}
