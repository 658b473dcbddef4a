/**
 * tsc in this process, for the tests that type-check generated types: what `tsc ARGS` reports,
 * from the TypeScript API. A test checks all its files in one program (each is its own module),
 * where a `tsc` process per file parsed and checked the libraries and the snippet's sources again.
 */
import ts from 'typescript';

/** What a user's strict project checks with: strict, ES2022 modules resolved as a bundler does, Node's types; no output. */
export const STRICT = [
  '--noEmit',
  '--strict',
  '--skipLibCheck',
  '--target',
  'es2022',
  '--module',
  'esnext',
  '--moduleResolution',
  'bundler',
  '--types',
  'node',
];

const formatHost: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (fileName) => fileName,
  getCurrentDirectory: () => process.cwd(),
  getNewLine: () => '\n',
};

/**
 * Type-checks as `tsc ...args` does (flags and files). `reportOf(file)` is the part of its report
 * about `file` (as named in `args`), a line per error; `reported` the files its report is about
 * (an empty name: about no file, such as the options).
 */
export function typecheck(args: string[]): { reportOf(file: string): string; reported: string[] } {
  const { options, fileNames, errors } = ts.parseCommandLine(args);
  if (errors.length > 0) throw new Error(ts.formatDiagnostics(errors, formatHost));
  const diagnostics = ts.getPreEmitDiagnostics(ts.createProgram(fileNames, options));
  const about = (file: string) => diagnostics.filter((diagnostic) => diagnostic.file?.fileName === ts.sys.resolvePath(file));
  return {
    reportOf: (file) => ts.formatDiagnostics(about(file), formatHost),
    reported: [...new Set(diagnostics.map((diagnostic) => diagnostic.file?.fileName ?? ''))],
  };
}
