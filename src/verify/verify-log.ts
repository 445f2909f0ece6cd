/**
 * `verifyLog`: would this version read a stored log the way the code that wrote it did? Reports
 * each session the current machine and catalog cannot decode, refuse or decide the same about, with
 * the first seq where it goes wrong (kinds: problems.ts). How: docs/architecture.md#design-notes-storage.
 *
 *   const report = await verifyLog(sqliteSource(db, { describe: file }));
 */
import type { SessionMachine } from '../machines/decider.ts';
import type { Db } from '../storage/sqlite/database.ts';
import { storedEvents } from '../storage/sqlite/event-rows.ts';
import { foldSession, type SessionFoldOptions } from './fold-session.ts';
import { type Problem, type SessionProblems, type VerifyReport, sortProblems } from './problems.ts';
import { compareProjections } from './projection-compare.ts';
import { ScratchProjection } from './scratch-projection.ts';
import { isSnapshotData } from './snapshot-check.ts';
import type { StoredItem, StoredLog } from './stored-log.ts';
import { MACHINE_VERSION } from '../machines/snapshot-store.ts';

export interface VerifyOptions {
  /** The machine to fold with (default the session machine; tests pass `.provide` mutants). */
  machine?: SessionMachine;
  /** The fast fold checked against the machine, event by event (default `evolve`; tests pass a broken one). */
  evolve?: SessionFoldOptions['evolve'];
  /** The machine version a stored snapshot must carry to be compared whole (default `MACHINE_VERSION`). */
  machineVersion?: string;
  /** Progress: `reading` the log in commit order (events so far of about `total`), then `folding` session by session. */
  onProgress?: (progress: { phase: 'reading' | 'folding'; done: number; total: number }) => void;
}

interface Seen {
  events: number;
  /** The last sequence at or before the stored projection's checkpoint. */
  seqAtCheckpoint: number;
}

const hasTable = (db: Db, name: string) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
const positionOf = (item: StoredItem) => ('event' in item ? item.event.position : item.undecodable.position) ?? 0;
const sessionOf = (item: StoredItem) => ('event' in item ? item.event.sessionId : item.undecodable.sessionId);

/** The stored projection's checkpoint, or why it is not compared. */
function storedCheckpoint(db: Db): { at: number; note?: string } | { skip: string } {
  if (!hasTable(db, 'session_execution')) return { skip: 'it has no projection tables' };
  const head = storedEvents(db).head();
  if (!hasTable(db, 'projector_checkpoint')) {
    return { at: head, note: 'its schema records no projector checkpoint: compared with the projection of the whole log' };
  }
  const at = db.prepare('SELECT COALESCE(MAX(position), 0) FROM projector_checkpoint').pluck().get() as number;
  if (at > head) {
    return {
      skip: `its projection is at position ${at}, past the file's own log (head ${head}): it follows another log (a NATS stream?); verify that log with --nats`,
    };
  }
  return { at };
}

function snapshotNotes(n: { whole: number; other: number; unreadable: number }): string[] {
  const out: string[] = [];
  const compared = n.whole + n.other;
  if (compared > 0) {
    out.push(
      `compared ${compared} stored snapshot${compared === 1 ? '' : 's'} with the current fold at ${compared === 1 ? 'its' : 'their'} sequence${n.other > 0 ? ` (${n.other} of another machine version, on state, execution, owner, pending inputs and recovery)` : ''}`,
    );
  }
  if (n.unreadable > 0) {
    out.push(
      `${n.unreadable} stored snapshot${n.unreadable === 1 ? ' is' : 's are'} not readable as snapshots: this version folds ${n.unreadable === 1 ? 'that session' : 'those sessions'} from the log`,
    );
  }
  return out;
}

export async function verifyLog(source: StoredLog, options: VerifyOptions = {}): Promise<VerifyReport> {
  const notes: string[] = [];
  const seen = new Map<string, Seen>();
  const scratch = new ScratchProjection();
  const projectionProblems = new Map<string, Problem[]>();
  try {
    const stored = source.projectionDb;
    const checkpoint = stored ? storedCheckpoint(stored) : undefined;
    let pending = checkpoint !== undefined && 'at' in checkpoint;
    const compare = () => {
      pending = false;
      const at = (checkpoint as { at: number }).at;
      const found = compareProjections(
        stored!,
        scratch.db,
        (id) => scratch.folds(id),
        (id) => seen.get(id)?.seqAtCheckpoint ?? 0,
      );
      for (const [id, list] of found) projectionProblems.set(id, list);
      const note = (checkpoint as { note?: string }).note;
      notes.push(`compared the stored projection at position ${at} with what this version's projector folds from the log${note ? ` (${note})` : ''}`);
    };
    if (checkpoint && 'skip' in checkpoint) notes.push(`the stored projection was not compared: ${checkpoint.skip}`);
    const total = await source.size();
    let read = 0;
    for await (const page of source.pages()) {
      for (const item of page) {
        const id = sessionOf(item);
        let s = seen.get(id);
        if (!s) seen.set(id, (s = { events: 0, seqAtCheckpoint: 0 }));
        s.events++;
        if (pending && 'event' in item && positionOf(item) <= (checkpoint as { at: number }).at) s.seqAtCheckpoint = item.event.seq;
      }
      const at = pending ? (checkpoint as { at: number }).at : Number.POSITIVE_INFINITY;
      const split = page.findIndex((item) => positionOf(item) > at);
      if (split < 0) scratch.apply(page);
      else {
        scratch.apply(page.slice(0, split));
        compare();
        scratch.apply(page.slice(split));
      }
      read += page.length;
      options.onProgress?.({ phase: 'reading', done: read, total: Math.max(total, read) });
    }
    if (pending) compare();

    const ids = [...seen.keys(), ...[...projectionProblems.keys()].filter((id) => !seen.has(id))].sort();
    const differing: SessionProblems[] = [];
    let folded = 0;
    const snapshots = { whole: 0, other: 0, unreadable: 0 };
    const version = options.machineVersion ?? MACHINE_VERSION;
    for (const id of ids) {
      const snapshot = await source.snapshot(id);
      const usable = snapshot && isSnapshotData(snapshot.data) ? { ...snapshot, data: snapshot.data } : undefined;
      if (snapshot && !usable) snapshots.unreadable++;
      else if (usable) snapshots[usable.machine === version ? 'whole' : 'other']++;
      const fold = await foldSession(id, source.session(id), {
        ...(options.machine ? { machine: options.machine } : {}),
        ...(options.evolve ? { evolve: options.evolve } : {}),
        ...(options.machineVersion ? { machineVersion: options.machineVersion } : {}),
        ...(usable ? { snapshot: usable } : {}),
        ...(source.evidence ? { evidence: true } : {}),
        onEvents: (n) => {
          folded += n;
          options.onProgress?.({ phase: 'folding', done: folded, total: read });
        },
      });
      const refusedByProjector = scratch.refused.get(id);
      const problems = sortProblems([...fold.problems, ...(refusedByProjector ? [refusedByProjector] : []), ...(projectionProblems.get(id) ?? [])]);
      if (problems.length > 0) differing.push({ sessionId: id, events: seen.get(id)?.events ?? 0, problems });
    }
    const events = [...seen.values()].reduce((n, s) => n + s.events, 0);
    notes.push(...snapshotNotes(snapshots));
    return {
      source: source.describe,
      sessions: ids.length,
      events,
      differing,
      log: [...source.problems],
      notes: [...source.notes, ...notes],
      ok: differing.length === 0 && source.problems.length === 0,
    };
  } finally {
    scratch.close();
  }
}
