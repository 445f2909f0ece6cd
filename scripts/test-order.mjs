// The order `npm test` runs its files in: longest first, by the durations the last runs measured
// (.tools/test-durations.json), else by the ones committed with the tests (test/durations.json),
// so a fresh clone does not end its run on one long file.
import { readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

/** A Map of file to milliseconds from a durations file (`[{ file, ms }]`); empty when it is missing or unreadable. */
export function readDurations(path) {
  try {
    return new Map(JSON.parse(readFileSync(path, 'utf8')).map((d) => [d.file, d.ms]));
  } catch {
    return new Map();
  }
}

/** The durations of earlier runs with this run's measurements over them (a partial run keeps the others). */
export function mergeDurations(earlier, measured) {
  const merged = new Map(earlier);
  for (const d of measured) merged.set(d.file, d.ms);
  return [...merged].map(([file, ms]) => ({ file, ms })).sort((a, b) => b.ms - a.ms);
}

/** `jobs` longest first: measured here, else committed, else `unmeasured(job)`. */
export function orderJobs(jobs, measured, committed, unmeasured = () => 0) {
  const estimate = (job) => measured.get(job) ?? committed.get(job) ?? unmeasured(job);
  return [...jobs].sort((a, b) => estimate(b) - estimate(a));
}

/** What starts a process or a thread (a browser, an MCP server over stdio): a file that does it is not in-process. */
const STARTS = /\bnode:child_process\b|['"]child_process['"]|\bnode:worker_threads\b|['"]playwright-core['"]|\/client\/stdio\b/;
/** Relative imports followed: the tests' own helpers (a module of src/ the test imports is not a test's process). */
const HELPERS = /^(test|src\/testing|clients\/testing)\//;

/**
 * True when the test file `file` (relative to `root`, e.g. test/cli/x.test.ts) starts no process
 * or thread of its own: neither it nor a helper it imports (under test/, src/testing/ or
 * clients/testing/, followed through their own imports) uses child_process or worker_threads.
 * Such files can run beside the files that run alone without their own timing at stake.
 */
export function inProcess(file, root = '.') {
  const seen = new Set();
  const visit = (path) => {
    if (seen.has(path)) return true;
    seen.add(path);
    let text;
    try {
      text = readFileSync(join(root, path), 'utf8');
    } catch {
      return true; // a package, or a path this walk does not resolve
    }
    if (STARTS.test(text)) return false;
    for (const [, spec] of text.matchAll(/\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = normalize(join(dirname(path), spec));
      if (HELPERS.test(target) && !visit(target)) return false;
    }
    return true;
  };
  return visit(normalize(file));
}
