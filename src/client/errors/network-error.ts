import { CdpError } from './cdp-error.js';

/** The request never got an answer: DNS, refused connection, reset, offline. */
export class NetworkError extends CdpError {
  override name = 'NetworkError' as const;
  constructor(method: string, url: string, cause: unknown) {
    super(`${method} ${url} failed: no response (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
  }
}
