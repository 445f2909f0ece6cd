// The order `npm test` runs its files in: longest first, by the durations the last runs measured
// (.tools/test-durations.json), else by the ones committed with the tests (test/durations.json),
// so a fresh clone does not end its run on one long file.
import { readFileSync } from 'node:fs';

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
