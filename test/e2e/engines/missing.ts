/**
 * What a suite does when a browser it needs is not installed: fail when CI requires that browser
 * (its REQUIRE variable is `1`), otherwise say SKIPPED in capitals, never silently.
 */

/** Throws when `variable` is `1`; otherwise prints the loud SKIPPED line and returns false. */
export function missingBrowser(suite: string, browser: string, why: string, variable: string): false {
  if (process.env[variable] === '1') throw new Error(`${suite}: ${why}, and ${variable}=1 requires it`);
  const line = `SKIPPED: no ${browser} — ${suite} did not run in ${browser}: ${why}`;
  console.warn(`\n${'!'.repeat(line.length)}\n${line}\n${'!'.repeat(line.length)}\n`);
  return false;
}
