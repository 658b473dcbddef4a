/**
 * A `fetch` made for the proxy (see node-fetch.ts) may hang the answer, already read, on the
 * Response it returns, under this key. The proxy then answers from it without reading the
 * Response again, which on Node means building Headers and a web stream per call. Answers
 * from any other `fetch` are read the ordinary way.
 */
export const RAW_ANSWER = Symbol.for('cdp-edge.relay.rawAnswer');

export interface RawAnswer {
  bytes: Uint8Array<ArrayBuffer>;
  contentType: string | undefined;
  retryAfter: string | undefined;
}

export type WithRawAnswer = Response & { [RAW_ANSWER]?: RawAnswer };
