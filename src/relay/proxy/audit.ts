/**
 * The audit trail: one entry per proxy call, written as one JSON line by the default logger.
 * It names the token's holder, never the token, the key, a body or the caller's path.
 */
import type { AuditEntry } from '../core/observe.js';

/** Writes each entry as one JSON line to stdout (Workers Logs and Node alike). */
export const consoleAudit = (entry: AuditEntry): void => console.log(JSON.stringify(entry));
