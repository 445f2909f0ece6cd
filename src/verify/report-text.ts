/** `verifyLog`'s report in plain words: one line per session that reads differently, and a summary. */
import { KINDS, type ProblemKind, type SessionProblems, type VerifyReport } from './problems.ts';

const n = (x: number) => x.toLocaleString('en-US');
const words: Record<ProblemKind, string> = {
  undecodable: 'undecodable',
  refused: 'refused',
  decides_differently: 'decides differently',
  projection_differs: 'projection differs',
};

/** `ses_1  refused at seq 7: <why>`, and how many more problems the session has. */
export function sessionLine(s: SessionProblems): string {
  const [first, ...rest] = s.problems;
  const more = rest.length === 0 ? '' : ` (and ${rest.length} more: ${rest.map((p) => `${p.kind} at seq ${p.seq}`).join(', ')})`;
  return `${s.sessionId}  ${first!.kind} at seq ${first!.seq}: ${first!.reason}${more}`;
}

export function summaryLine(r: VerifyReport): string {
  const all = `${n(r.sessions)} session${r.sessions === 1 ? '' : 's'} (${n(r.events)} event${r.events === 1 ? '' : 's'})`;
  const log = r.log.length === 0 ? '' : `; and the log itself: ${r.log.map((p) => p.kind).join(', ')}`;
  if (r.differing.length === 0) {
    return r.log.length === 0 ? `verified ${all}: all read the same with this version` : `verified ${all}: each reads the same with this version${log}`;
  }
  const byKind = KINDS.map((k) => [k, r.differing.filter((s) => s.problems.some((p) => p.kind === k)).length] as const)
    .filter(([, count]) => count > 0)
    .map(([k, count]) => `${n(count)} ${words[k]}`);
  return `${n(r.differing.length)} of ${all.replace(/ \(.*/, '')} would read differently with this version: ${byKind.join(', ')}${log}`;
}

/** Every line of the text output: notes, log problems, sessions, the summary. */
export function reportLines(r: VerifyReport): string[] {
  return [...r.notes, ...r.log.map((p) => `LOG ${p.kind}: ${p.reason}`), ...r.differing.map(sessionLine), summaryLine(r)];
}
