/** The base of every error the client throws: catch this one to catch them all. */
export class CdpError extends Error {
  override name: string = 'CdpError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
