/**
 * Drives the test upstream over HTTP (works from Node and from inside workerd):
 * script faults for the next calls, read what the platform received, reset.
 */

export interface Fault {
  status?: number;
  body?: unknown;
  /** close the connection without an answer (the upstream is down) */
  drop?: boolean;
  /** ms to wait before answering */
  delayMs?: number;
  /** apply the call (the platform takes it), then close the connection without its answer */
  lose?: boolean;
  /** apply the call, then send its status and the first half of its answer (chunked), and never the rest */
  stallBody?: boolean;
  /**
   * strike only calls whose body contains this text (an entry's email, say), whenever they arrive:
   * calls in flight together reach the platform in any order, so a fault meant for one entry names it
   */
  when?: string;
}

export interface Received {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: any;
  /** ms since epoch the call arrived */
  at: number;
  /** the status it was answered with (0 = dropped) */
  status: number;
  /** ms since epoch the platform was done with it (answered, or applied and its answer lost); absent when dropped */
  answered?: number;
}

export interface UpstreamControl {
  url: string;
  faults(list: Fault[]): Promise<void>;
  /** answer every call with `fault` until cleared with `faults([])` */
  always(fault: Fault | undefined): Promise<void>;
  received(): Promise<Received[]>;
  reset(): Promise<void>;
}

export function upstreamControl(url: string, fetchImpl: typeof fetch = fetch): UpstreamControl {
  const call = async (path: string, body?: unknown) => {
    const response = await fetchImpl(`${url}/__control/${path}`, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
    if (!response.ok) throw new Error(`upstream control ${path}: ${response.status}`);
    return response.json();
  };
  return {
    url,
    faults: async (list) => void (await call('faults', list)),
    always: async (fault) => void (await call('always', fault ?? null)),
    received: async () => (await call('received')) as Received[],
    reset: async () => void (await call('reset', {})),
  };
}
