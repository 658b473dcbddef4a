/**
 * Optional dependencies (the SQLite and Redis drivers) are loaded only by the store that needs
 * them, so nothing else pays for them and a missing one says how to install it.
 * @module
 */

/** Imports `name`, or throws an error that names the package and what needs it. */
export async function loadOptional<T>(name: string, neededBy: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (cause) {
    throw new Error(`${neededBy} needs the package "${name}", which is not installed: run \`npm install ${name}\``, { cause });
  }
}
