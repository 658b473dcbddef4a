import { HTTPError, type HTTPErrorInit } from './http-error.js';

/** 429 after the retries allowed: wait `tryInSeconds` before calling again. */
export class RateLimitError extends HTTPError {
  override name = 'RateLimitError' as const;
  readonly tryInSeconds: number;

  constructor(init: HTTPErrorInit & { tryInSeconds: number }) {
    super(init);
    this.tryInSeconds = init.tryInSeconds;
    this.message += ` (try again in ${init.tryInSeconds} s)`;
  }
}
