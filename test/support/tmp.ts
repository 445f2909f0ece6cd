import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh temporary directory and a function that removes it. */
export function tempDir(prefix = 'sessiond-test-'): { dir: string; file: (name: string) => string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, file: (name) => join(dir, name), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
