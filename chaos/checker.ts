/**
 * The fault suite's invariant checker. It reads the raw log (SQLite `event` rows, or JetStream
 * messages) with its own msgpack decoder and its own rules, and shares no code with sessiond's
 * machine, fold, codec or audit, so a bug there cannot hide itself here.
 *
 * Safety (at every point of the log):
 *   fencing        each session's seqs are 1, 2, 3, ... with no gap or repeat
 *   single_owner   a claim only when the session's previous execution has ended (settled,
 *                  cancelled or recovered): never a second owner, live or expired-unrecovered
 *   lease          no write by an execution after it ended, nor stamped past its lease
 *                  (the lease extended only by renewals made before it ran out)
 *   promotion      each input promoted at most once, only after it was admitted, never after it was
 *                  dropped (and only pending inputs dropped)
 *   recovery       each execution recovered at most once, and only after its lease ran out
 *   waits          a call that waited for a person starts only once approved, and once; a wait
 *                  ends once, after it started; a timer (or a signal's timeout) never ends early
 * Liveness (judged on a quiescent log):
 *   nothing_stranded  every input admitted with a wake was promoted or dropped; no execution left unended;
 *                     every recovery completed; no wait left open (the driver answers every
 *                     approval at quiescence, and the sweep ends every timer)
 */
import { Unpackr } from 'msgpackr';

/** One event as the checker sees it: no schema, only the fields its rules read. */
export interface RawEvent {
  session: string;
  seq: number;
  type: string;
  time: number;
  payload: Record<string, unknown>;
}

export type Check = 'fencing' | 'single_owner' | 'lease' | 'promotion' | 'recovery' | 'waits' | 'nothing_stranded';
export const CHECKS: readonly Check[] = ['fencing', 'single_owner', 'lease', 'promotion', 'recovery', 'waits', 'nothing_stranded'];

export interface Finding {
  check: Check;
  session: string;
  seq: number;
  message: string;
}

const unpackr = new Unpackr({ useRecords: false, int64AsType: 'number' } as ConstructorParameters<typeof Unpackr>[0]);

/** Decodes a msgpack value (plain maps and arrays only). */
export function decode(bytes: Uint8Array): unknown {
  return unpackr.unpack(bytes);
}

/** Runner writes: what only the owning execution writes while it runs. */
const OWNER_WRITES = new Set([
  'execution.started',
  'execution.renewed',
  'execution.phase',
  'step.started',
  'step.ended',
  'text.streamed',
  'text.completed',
  'tool.called',
  'tool.started',
  'tool.succeeded',
  'input.promoted',
  'execution.settled',
  'compaction.started',
  'compaction.completed',
  'wait.started',
]);
/** Written when an execution ends (cancel, recovery, hand-back), in the same append as the end. */
const SEALS = new Set(['step.failed', 'step.recovered', 'tool.failed']);

interface Exec {
  id: string;
  owner: string;
  expiresAt: number;
  ended: string | null;
  endSeq: number;
}

function sessionFindings(events: RawEvent[], quiescent: boolean): Finding[] {
  const out: Finding[] = [];
  const session = events[0]!.session;
  const find = (check: Check, seq: number, message: string) => out.push({ check, session, seq, message: `${session} seq ${seq}: ${message}` });
  const execs = new Map<string, Exec>();
  let current: Exec | undefined;
  const admitted = new Map<string, boolean>(); // input -> asked for a wake
  const promoted = new Set<string>();
  const dropped = new Set<string>();
  const recovered = new Set<string>();
  const completed = new Set<string>();
  let sealing: string | null = null; // the execution that just ended: its seals may follow
  const waits = new Map<string, { until: number | undefined; outcome: string | null; seq: number }>(); // by execution/kind/name
  const approvals = new Map<string, { outcome: string | null; started: number | null }>(); // by call id
  for (const [i, e] of events.entries()) {
    if (e.seq !== i + 1) find('fencing', e.seq, `expected seq ${i + 1}`);
    const exe = typeof e.payload.executionId === 'string' ? e.payload.executionId : undefined;
    const x = exe ? execs.get(exe) : undefined;
    const isSeal = SEALS.has(e.type) && exe !== undefined && exe === sealing;
    if (!isSeal) sealing = null;
    if (x && (OWNER_WRITES.has(e.type) || SEALS.has(e.type)) && !isSeal) {
      if (x.ended) find('lease', e.seq, `${e.type} by execution ${x.id} after it ended (${x.ended} at seq ${x.endSeq})`);
      else if (e.time > x.expiresAt) find('lease', e.seq, `${e.type} by execution ${x.id} stamped ${e.time - x.expiresAt} ms after its lease ran out`);
    }
    switch (e.type) {
      case 'execution.claimed': {
        if (current && !current.ended)
          find('single_owner', e.seq, `execution ${String(e.payload.executionId)} claimed while execution ${current.id} (${current.owner}) had not ended`);
        current = { id: String(e.payload.executionId), owner: String(e.payload.ownerId), expiresAt: Number(e.payload.expiresAt), ended: null, endSeq: 0 };
        if (execs.has(current.id)) find('single_owner', e.seq, `execution ${current.id} claimed twice`);
        execs.set(current.id, current);
        break;
      }
      case 'execution.renewed':
        if (x && !x.ended && e.time <= x.expiresAt) x.expiresAt = Number(e.payload.expiresAt);
        break;
      case 'execution.settled':
      case 'execution.cancelled':
        if (x && !x.ended) {
          x.ended = e.type === 'execution.settled' ? `settled ${String(e.payload.outcome)}` : 'cancelled';
          x.endSeq = e.seq;
        }
        if (e.type === 'execution.cancelled') sealing = exe ?? null;
        break;
      case 'recovery.started':
        if (!exe) break;
        if (recovered.has(exe)) find('recovery', e.seq, `execution ${exe} recovered twice`);
        recovered.add(exe);
        if (x && !x.ended && e.time < x.expiresAt) find('recovery', e.seq, `execution ${exe} recovered ${x.expiresAt - e.time} ms before its lease ran out`);
        if (x?.ended) find('recovery', e.seq, `execution ${exe} recovered after it ended (${x.ended})`);
        if (x && !x.ended) {
          x.ended = 'recovered';
          x.endSeq = e.seq;
        }
        sealing = exe;
        break;
      case 'recovery.completed':
        if (exe) completed.add(exe);
        break;
      case 'input.admitted':
        admitted.set(String(e.payload.inputId), e.payload.wake === true);
        break;
      case 'wait.started': {
        const key = `${String(e.payload.executionId)}/${String(e.payload.kind)}/${String(e.payload.name)}`;
        waits.set(key, { until: typeof e.payload.until === 'number' ? e.payload.until : undefined, outcome: null, seq: e.seq });
        if (e.payload.kind === 'approval') approvals.set(String(e.payload.name), { outcome: null, started: null });
        break;
      }
      case 'wait.resolved': {
        const key = `${String(e.payload.executionId)}/${String(e.payload.kind)}/${String(e.payload.name)}`;
        const w = waits.get(key);
        const outcome = String(e.payload.outcome);
        if (!w) find('waits', e.seq, `${key} ended ${outcome} but never started`);
        else if (w.outcome !== null) find('waits', e.seq, `${key} ended twice (${w.outcome}, then ${outcome})`);
        else {
          w.outcome = outcome;
          if ((outcome === 'elapsed' || outcome === 'timed_out') && (w.until === undefined || e.time < w.until))
            find('waits', e.seq, `${key} ended ${outcome} at ${e.time}, before its time ${String(w.until)}`);
        }
        const a = e.payload.kind === 'approval' ? approvals.get(String(e.payload.name)) : undefined;
        if (a && a.outcome === null) a.outcome = outcome;
        break;
      }
      case 'tool.called':
      case 'tool.started': {
        const a = approvals.get(String(e.payload.callId));
        if (!a || (e.type === 'tool.called' && e.payload.started !== true)) break;
        if (a.started !== null) find('waits', e.seq, `call ${String(e.payload.callId)} started twice (first at seq ${a.started})`);
        else if (a.outcome !== 'approved')
          find('waits', e.seq, `call ${String(e.payload.callId)} started though a person ${a.outcome === null ? 'had not decided' : `decided ${a.outcome}`}`);
        a.started = e.seq;
        break;
      }
      case 'input.promoted': {
        const input = String(e.payload.inputId);
        if (!admitted.has(input)) find('promotion', e.seq, `input ${input} promoted but never admitted`);
        if (promoted.has(input)) find('promotion', e.seq, `input ${input} promoted twice`);
        if (dropped.has(input)) find('promotion', e.seq, `input ${input} promoted after it was dropped`);
        promoted.add(input);
        break;
      }
      case 'input.dropped':
        // an operator dropped them unrun: no longer owed a run, and never to be promoted
        for (const input of (e.payload.inputIds as unknown[] | undefined) ?? []) {
          if (!admitted.has(String(input)) || promoted.has(String(input))) find('promotion', e.seq, `input ${String(input)} dropped but it was not pending`);
          dropped.add(String(input));
        }
        break;
    }
  }
  if (quiescent) {
    const last = events[events.length - 1]!.seq;
    for (const [input, wake] of admitted)
      if (wake && !promoted.has(input) && !dropped.has(input)) find('nothing_stranded', last, `input ${input} asked for a wake and was never run`);
    if (current && !current.ended) find('nothing_stranded', last, `execution ${current.id} (${current.owner}) never ended`);
    for (const exe of recovered) if (!completed.has(exe)) find('nothing_stranded', last, `the recovery of ${exe} never completed`);
    for (const [key, w] of waits) if (w.outcome === null) find('nothing_stranded', w.seq, `${key} never ended`);
  }
  return out;
}

/** Every finding of a log (events of many sessions, each session's in seq order). `quiescent`: judge liveness too. */
export function check(events: Iterable<RawEvent>, options: { quiescent: boolean }): Finding[] {
  const bySession = new Map<string, RawEvent[]>();
  for (const e of events) {
    const list = bySession.get(e.session) ?? [];
    list.push(e);
    bySession.set(e.session, list);
  }
  return [...bySession.values()].flatMap((list) =>
    sessionFindings(
      list.sort((a, b) => a.seq - b.seq),
      options.quiescent,
    ),
  );
}

/** The events of SQLite `event` rows (columns as stored: aggregate_id, seq, type, time, data). */
export function fromSqliteRows(rows: Iterable<{ aggregate_id: string; seq: number; type: string; time: number; data: Uint8Array }>): RawEvent[] {
  const out: RawEvent[] = [];
  for (const r of rows)
    out.push({ session: r.aggregate_id, seq: r.seq, type: r.type, time: Number(r.time), payload: decode(r.data) as Record<string, unknown> });
  return out;
}

/** The events of one JetStream message body (a msgpack array of frames). Throws on anything else. */
export function fromStreamMessage(data: Uint8Array): RawEvent[] {
  const frames = decode(data);
  if (!Array.isArray(frames)) throw new Error('a stream message that is not an array of frames');
  return frames.map((f: Record<string, unknown>) => ({
    session: String(f.sessionId),
    seq: Number(f.seq),
    type: String(f.type),
    time: Number(f.time),
    payload: (f.payload ?? {}) as Record<string, unknown>,
  }));
}
