/**
 * workerd's own report of a subrequest it cancelled, which the run ignores (vitest.config.ts at the
 * root: Vitest reads `onUnhandledError` there only, not in a project). When fetchTransport's timer
 * aborts a call just as workerd takes in the answer's headers, workerd rejects a promise of its own
 * with the abort's reason and nobody can handle it: the caller's fetch promise rejects (handled) and
 * the one rejected unhandled is none of the relay's, checked with the isolate's `unhandledrejection`
 * event (its `promise` was neither the fetch's nor one derived from it; its reason was the signal's).
 * It happened with no body, a string body or bytes alike, and with a bare `fetch` aborted 1 ms on.
 * No way around it was found: another reason is reported as an uncaught exception (f40078d), and
 * a call without a signal would hold its subrequest after its timeout. The relay's caller still
 * gets its UpstreamTimeout (call-timeout.test.ts). Everything else still fails the run, an
 * AbortError from anywhere else too: only the rejection whose reason was created at that one
 * `controller.abort()` line, with no other frame, in a workerd test file, is ignored. A promise of
 * the relay's left unhandled with that same reason would be hidden as well: fetchTransport races
 * each promise it starts against its timer, so none is left so.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TRANSPORT = fileURLToPath(new URL('../../src/relay/deliver/transport.ts', import.meta.url));
/** The line of fetchTransport's timer that aborts the call (the only `controller.abort()` in the file). */
const ABORT_LINE =
  readFileSync(TRANSPORT, 'utf8')
    .split('\n')
    .findIndex((line) => line.trim() === 'controller.abort();') + 1;

interface Reported {
  type?: string;
  name?: string;
  message?: string;
  stack?: string;
  VITEST_TEST_PATH?: string;
}

/** True for workerd's own unhandled AbortError of a call fetchTransport timed out; Vitest drops the error when `onUnhandledError` returns false. */
export function isWorkerdAbortReport(error: Reported): boolean {
  const frames = (error.stack ?? '').split('\n').slice(1);
  return (
    ABORT_LINE > 0 &&
    error.type === 'Unhandled Rejection' &&
    error.name === 'AbortError' &&
    error.message === 'The operation was aborted' &&
    (error.VITEST_TEST_PATH ?? '').includes('/test/workerd/') &&
    frames.length === 1 &&
    frames[0]!.trim().startsWith(`at ${TRANSPORT}:${ABORT_LINE}:`)
  );
}
