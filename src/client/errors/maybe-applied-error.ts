import { CdpError } from './cdp-error.js';

/**
 * A call that is not safe to repeat (`activities/create`, the create-definition calls) failed in
 * a way that does not tell whether the platform applied it: a timeout, a connection lost after the
 * request was sent, or a 500/502/504. The client does not retry it, so nothing is recorded twice;
 * check the platform before sending it again. `cause` is the failure itself (a TimeoutError,
 * NetworkError or HTTPError).
 */
export class MaybeAppliedError extends CdpError {
  override name = 'MaybeAppliedError' as const;
  /** the endpoint ID, e.g. `activities/create` */
  readonly endpoint: string;
  constructor(endpoint: string, failure: Error) {
    super(
      `${failure.message}. The platform may have applied this ${endpoint} call: check before sending it again (it is not retried, so it is never applied twice)`,
      {
        cause: failure,
      },
    );
    this.endpoint = endpoint;
  }
}
