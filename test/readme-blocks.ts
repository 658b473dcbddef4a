/**
 * The fenced code blocks of README.md, for the tests that run them (test/readme.test.ts in
 * Node, test/e2e/demo-readme.test.ts in Chromium): every block is exercised by one of them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Block {
  lang: string;
  code: string;
  /** 1-based line of the opening fence, for messages */
  line: number;
}

export const README = join(import.meta.dirname, '..', 'README.md');

/** Every fenced block of README.md, in order. */
export function readmeBlocks(): Block[] {
  const lines = readFileSync(README, 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.indexOf('```', i + 1);
    if (end < 0) throw new Error(`README.md:${i + 1}: a code fence is never closed`);
    blocks.push({ lang: open[1]!, code: lines.slice(i + 1, end).join('\n'), line: i + 1 });
    i = end;
  }
  return blocks;
}
