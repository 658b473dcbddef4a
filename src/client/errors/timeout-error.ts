import { CdpError } from './cdp-error.js';

/** No response within `timeout` ms. The platform may still have processed the request. */
export class TimeoutError extends CdpError {
  override name = 'TimeoutError' as const;
  constructor(method: string, url: string, timeout: number, cause?: unknown) {
    super(`${method} ${url} timed out after ${timeout} ms; raise the client's timeout option if calls are slow`, { cause });
  }
}
