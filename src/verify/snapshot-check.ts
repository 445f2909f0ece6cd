/**
 * A stored session snapshot against the current fold at its sequence: whole for the current machine
 * version, only what decides the next steps for another. Why: docs/architecture.md#design-notes-storage.
 */
import { preview } from '../events/codec.ts';
import type { SessionSnapshot } from '../machines/decider.ts';
import { firstDifference } from './first-difference.ts';
import type { StoredSnapshot } from './stored-log.ts';

type Loose = { value?: unknown; context?: object };

/** Whether the stored data is shaped like a snapshot at all (else the current code folds the session from the log). */
export function isSnapshotData(data: unknown): data is SessionSnapshot {
  const d = data as Loose | null;
  return typeof d === 'object' && d !== null && typeof d.value === 'string' && typeof d.context === 'object' && d.context !== null;
}

/** A field of plain data, whatever its shape. */
const at = (o: unknown, key: string): unknown => (typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[key] : undefined);

/** What decides a session's next steps, in any version of the context. */
function decisive(s: Loose): Record<string, unknown> {
  const c = s.context;
  const execution = at(c, 'execution');
  const pending = at(c, 'pending');
  const recovery = at(c, 'recovery');
  return {
    value: s.value,
    seq: at(c, 'seq'),
    execution:
      execution === undefined
        ? undefined
        : execution
          ? { id: at(execution, 'id'), ownerId: at(execution, 'ownerId'), cancelled: at(execution, 'cancelled') }
          : null,
    pending: Array.isArray(pending) ? pending.map((p) => at(p, 'inputId')) : pending,
    recovery: recovery === undefined ? undefined : recovery ? { executionId: at(recovery, 'executionId') } : null,
  };
}

/** `folded` with only the fields `stored` has (an older context may lack some: they are not compared). */
function only(folded: Record<string, unknown>, stored: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(folded)) {
    const theirs = stored[k];
    if (theirs === undefined) continue;
    out[k] =
      typeof v === 'object' && v !== null && !Array.isArray(v) && typeof theirs === 'object' && theirs !== null
        ? only(v as Record<string, unknown>, theirs as Record<string, unknown>)
        : v;
  }
  return out;
}

/** The pending inputs without `unverified`, which only a cold load's copy carries. */
function comparable(s: Loose): Loose {
  const pending = at(s.context, 'pending');
  return {
    value: s.value,
    context: { ...s.context, pending: Array.isArray(pending) ? pending.map(({ unverified: _u, ...p }: Record<string, unknown>) => p) : pending },
  };
}

/** Why the stored snapshot contradicts the fold, in words; undefined when it agrees. */
export function snapshotDifference(stored: StoredSnapshot & { data: SessionSnapshot }, folded: SessionSnapshot, machineVersion: string): string | undefined {
  const same = stored.machine === machineVersion;
  const asStored = JSON.parse(JSON.stringify(folded)) as Loose; // the fold as a store would hold it
  const d = same
    ? firstDifference(comparable(stored.data), comparable(asStored))
    : firstDifference(decisive(stored.data), only(decisive(asStored), decisive(stored.data)));
  if (!d) return undefined;
  const which = same ? 'this version' : `machine ${stored.machine}, not this version's ${machineVersion}`;
  return `the stored snapshot at seq ${stored.seq} (${which}) says ${d.path || 'the snapshot'} is ${preview(d.left)}, the current fold of the log says ${preview(d.right)}`;
}
