/** The one error the emulator's handlers throw; the app turns it into the platform's general error body. */
import type { PlatformErrorDetail } from '../api/index.js';

/** An HTTP error answered as `{request_id, code, error, details?}`. */
export class PlatformHttpError extends Error {
  override name = 'PlatformHttpError' as const;
  constructor(
    readonly status: number,
    message: string,
    readonly details?: PlatformErrorDetail[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Throws a 400 (or `status`) with `message`. */
export function fail(message: string, status = 400, details?: PlatformErrorDetail[]): never {
  throw new PlatformHttpError(status, message, details);
}
