/** The audit trail: one JSON line per proxy call. Never the token, the key or a body. */

export interface AuditEntry {
  /** ISO time the call arrived */
  time: string;
  /** the token's configured name; null when no valid token was presented */
  token: string | null;
  /** the endpoint ID (`person/merge`); null for paths the proxy does not serve */
  endpoint: string | null;
  status: number;
  /** ms from arrival until the answer's headers were ready (a streamed body may still be flowing) */
  duration_ms: number;
  /** calls made to the platform (0 when refused; more than 1 for `?chunk=true`) */
  upstream_calls: number;
  /** the relay's error code when the relay itself refused or failed the call */
  error?: string;
}

/** The line the logger receives: `{"type":"relay.proxy", …entry}`. */
export function auditLine(entry: AuditEntry): string {
  return JSON.stringify({ type: 'relay.proxy', ...entry });
}
