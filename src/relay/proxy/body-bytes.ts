/**
 * A `fetch` made for the proxy may hang the whole body, already read, on the Response it returns
 * (under this key); the proxy then answers with those bytes instead of reading the Response again,
 * which on Node means building a web stream per call. Other `fetch`es are read the ordinary way.
 */
export const BODY_BYTES = Symbol.for('cdp-edge.relay.bodyBytes');

export type WithBodyBytes = Response & { [BODY_BYTES]?: Uint8Array<ArrayBuffer> };
