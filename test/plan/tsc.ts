/**
 * tsc in this process, for the tests that type-check generated types: what `tsc ARGS` reports and
 * its outcome, from the TypeScript API. A file's checks share what they parsed (the lib files, the
 * snippet's sources) from one call to the next, where each `tsc` process parsed it all again.
 */
import ts from 'typescript';

/** Parsed files by path, kept while their text is unchanged. */
const parsed = new Map<string, ts.SourceFile>();
let previous: ts.Program | undefined;

const formatHost: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (fileName) => fileName,
  getCurrentDirectory: () => process.cwd(),
  getNewLine: () => '\n',
};

/** Type-checks as `tsc ...args` does (flags and files); `code` is 0 when it reports nothing, and `report` is its report, a line per error. */
export function typecheck(args: string[]): { code: number; report: string } {
  const { options, fileNames, errors } = ts.parseCommandLine(args);
  if (errors.length > 0) throw new Error(ts.formatDiagnostics(errors, formatHost));
  const host = ts.createCompilerHost(options);
  host.getSourceFile = (fileName, languageVersion) => {
    const text = ts.sys.readFile(fileName);
    if (text === undefined) return undefined;
    const known = parsed.get(fileName);
    if (known?.text === text) return known;
    const file = ts.createSourceFile(fileName, text, languageVersion);
    parsed.set(fileName, file);
    return file;
  };
  const program = ts.createProgram({ rootNames: fileNames, options, host, ...(previous ? { oldProgram: previous } : {}) });
  previous = program;
  const diagnostics = ts.getPreEmitDiagnostics(program);
  return { code: diagnostics.length > 0 ? 1 : 0, report: ts.formatDiagnostics(diagnostics, formatHost) };
}
