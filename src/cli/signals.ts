/** Shared by the long-running commands: wait for Ctrl-C or a service manager's stop. */

/** Resolves on the first SIGINT or SIGTERM (and stops listening, so a second one kills as usual). */
export function untilStopped(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
