/**
 * The audit trail: one entry per proxy call, written as one JSON line by the default logger.
 * It names the token's holder, never the token, the key, a body or the caller's path.
 */

/** One call. A type (not an interface) so loggers typed for the relay's log lines accept it. */
export type AuditEntry = {
  /** ISO time the call arrived */
  ts: string;
  kind: 'proxy';
  method: string;
  /** the endpoint's fixed path, or `/v1/*` for paths the proxy does not serve */
  path: string;
  status: number;
  /** ms from arrival until the answer's headers were ready (a streamed body may still be flowing) */
  ms: number;
  /** the token's configured name; null when no valid token was presented */
  token: string | null;
  /** the endpoint ID (`person/merge`); null for paths the proxy does not serve */
  endpoint: string | null;
  /** calls made to the platform (0 when refused; more than 1 for `?chunk=true`) */
  upstream_calls: number;
  /** the relay's error code when the relay itself refused or failed the call */
  error?: string;
};

/** Writes each entry as one JSON line to stdout (Workers Logs and Node alike). */
export const consoleAudit = (entry: AuditEntry): void => console.log(JSON.stringify(entry));
