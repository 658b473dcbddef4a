// The outbox and pacer conformance suite (test/relay/suite/outbox-suite.ts) on every Node store.
import { createMemoryOutbox, createMemoryPacer } from '../../src/relay/deliver/memory.js';
import type { Pacer } from '../../src/relay/deliver/outbox.js';
import { outboxSuite } from './suite/outbox-suite.js';

outboxSuite('memory', {
  async open() {
    // One store object, shared by every "connection" to it, as the deliverer and the proxy share it in one process.
    const outbox = createMemoryOutbox();
    let shared: Pacer | undefined;
    const handle = {
      outbox,
      pacer: (rate: number) => {
        shared ??= createMemoryPacer(rate);
        return shared;
      },
      async close() {},
    };
    return { ...handle, another: async () => handle };
  },
});
