/**
 * The conversation view: what the agent of a session said and did, as entries (prompt, turn, step,
 * wait, compaction, recovery, fork) folded from its events, purely; large values bounded (bounded.ts).
 * The entries: docs/inspector.md#the-conversation (why: docs/inspector.md#the-conversation-fold).
 */
import type { SessionEvent } from '../events/envelope.ts';
import { promptText } from '../events/prompt.ts';
import { appendBounded, boundError, boundText, boundValue, partView, type Bounded } from './bounded.ts';
import { forkedEntry } from './conversation-fork.ts';
import { keyOf, places, placesOf } from './conversation-places.ts';
import type {
  CompactionEntry,
  Conversation,
  ConversationEntry,
  Draft,
  ForkEntry,
  PromptEntry,
  RecoveryEntry,
  StepEntry,
  StepPart,
  ToolPart,
  TurnEntry,
  WaitEntry,
} from './conversation-types.ts';

export type * from './conversation-types.ts';

/** A delivered session call's `data` (the child's turn end: { outcome, text, error? }) as the entry shows it. */
function callAnswer(data: unknown): WaitEntry['answer'] {
  if (data === null || typeof data !== 'object') return null;
  const d = data as { outcome?: unknown; text?: unknown; error?: unknown };
  if (typeof d.outcome !== 'string') return null;
  return {
    outcome: d.outcome,
    text: boundText(typeof d.text === 'string' ? d.text : ''),
    error: typeof d.error === 'string' ? boundText(d.error) : null,
  };
}

export function emptyConversation(sessionId: string): Conversation {
  return { sessionId, seq: 0, eventId: null, time: 0, entries: [], queued: [] };
}

/** Folds committed events of the conversation's session (in sequence order; earlier ones are skipped). */
export function foldConversation(c: Conversation, events: readonly SessionEvent[]): Conversation {
  const entries = c.entries.slice();
  const kept = places(c.entries);
  kept.length = -1; // taken over: until this fold returns, no other may extend it
  const at = kept.map;
  let queued = c.queued.slice();
  let { seq, eventId, time } = c;
  const first = c.first ?? 0;
  const push = <T extends ConversationEntry>(entry: Draft<T>) => {
    const key = keyOf(entry);
    if (key !== null) at.set(key, entries.length);
    entries.push({ ...entry, index: first + entries.length } as unknown as ConversationEntry);
  };
  /** The entry of `key` (or, unkeyed, the latest matching), replaced by `change(it)`; false when there is none. */
  const update = <K extends ConversationEntry['kind']>(
    kind: K,
    key: string | null,
    match: (e: Extract<ConversationEntry, { kind: K }>) => boolean,
    change: (e: Extract<ConversationEntry, { kind: K }>) => Omit<Extract<ConversationEntry, { kind: K }>, 'changedSeq'>,
  ): boolean => {
    let found = -1;
    if (key !== null) found = at.get(key) ?? -1;
    else
      for (let i = entries.length - 1; i >= 0 && found < 0; i--)
        if (entries[i]!.kind === kind && match(entries[i] as Extract<ConversationEntry, { kind: K }>)) found = i;
    if (found < 0) return false;
    entries[found] = { ...change(entries[found] as Extract<ConversationEntry, { kind: K }>), changedSeq: seq } as unknown as ConversationEntry;
    return true;
  };
  const step = (messageId: string, change: (s: StepEntry) => Omit<StepEntry, 'changedSeq'>) =>
    update('step', `m${messageId}`, (s) => s.messageId === messageId, change);
  const tool = (messageId: string, callId: string, change: (p: ToolPart, s: StepEntry) => ToolPart) =>
    step(messageId, (s) => ({ ...s, parts: s.parts.map((p) => (p.type === 'tool' && p.callId === callId ? change(p, s) : p)) }));
  const turn = (executionId: string, change: (t: TurnEntry) => Omit<TurnEntry, 'changedSeq'>) =>
    update('turn', `t${executionId}`, (t) => t.executionId === executionId, change);
  const base = (e: SessionEvent) => ({ seq: e.seq, time: e.time, changedSeq: e.seq });

  for (const e of events) {
    if (e.seq <= seq) continue;
    seq = e.seq;
    eventId = e.id;
    time = e.time;
    switch (e.type) {
      case 'input.admitted': {
        const p = e.payload;
        const continues = p.continues
          ? {
              reason: p.continues.reason,
              executionId: p.continues.executionId,
              phase: p.continues.phase,
              retryTools: p.continues.retryTools.map((t) => t.name),
            }
          : null;
        queued.push({
          kind: 'prompt',
          index: -1,
          ...base(e),
          inputId: p.inputId,
          state: 'queued',
          source: p.source,
          delivery: p.delivery,
          admittedSeq: e.seq,
          admittedAt: e.time,
          executionId: null,
          text: boundText(promptText(p.prompt)),
          parts: typeof p.prompt === 'string' ? null : p.prompt.map(partView),
          continues,
          notBefore: p.notBefore ?? null,
          droppedReason: null,
        });
        break;
      }
      case 'input.promoted': {
        const at = queued.findIndex((q) => q.inputId === e.payload.inputId);
        if (at < 0) break;
        const { index: _i, ...prompt } = queued[at]!;
        queued = queued.filter((_, i) => i !== at);
        push<PromptEntry>({ ...prompt, ...base(e), state: 'in_turn', executionId: e.payload.executionId });
        break;
      }
      case 'input.dropped': {
        const ids = new Set(e.payload.inputIds);
        for (const { index: _i, ...prompt } of queued.filter((q) => ids.has(q.inputId)))
          push<PromptEntry>({
            ...prompt,
            ...base(e),
            state: 'dropped',
            droppedReason: e.payload.reason ?? null,
            ...(e.payload.actor === undefined ? {} : { droppedBy: e.payload.actor }),
          });
        queued = queued.filter((q) => !ids.has(q.inputId));
        break;
      }
      case 'execution.claimed': {
        const p = e.payload;
        push<TurnEntry>({
          kind: 'turn',
          ...base(e),
          executionId: p.executionId,
          ownerId: p.ownerId,
          leaseMs: p.leaseMs,
          renewals: 0,
          outcome: null,
          error: null,
          cancelReason: null,
          waitingFor: [],
          endedSeq: null,
          durationMs: null,
        });
        break;
      }
      case 'execution.renewed':
        turn(e.payload.executionId, (t) => ({ ...t, renewals: t.renewals + 1 }));
        break;
      case 'execution.cancelled':
        turn(e.payload.executionId, (t) =>
          t.outcome !== null && t.outcome !== 'waiting'
            ? t
            : {
                ...t,
                outcome: 'cancelled',
                cancelReason: e.payload.reason ?? null,
                ...(e.payload.actor === undefined ? {} : { cancelledBy: e.payload.actor }),
                endedSeq: e.seq,
                durationMs: t.durationMs ?? e.time - t.time,
              },
        );
        break;
      case 'execution.settled': {
        const p = e.payload;
        turn(p.executionId, (t) =>
          t.outcome !== null
            ? t
            : {
                ...t,
                outcome: p.outcome === 'released' ? 'handed_back' : p.outcome,
                error: p.error ? boundError(p.error) : null,
                endedSeq: e.seq,
                durationMs: e.time - t.time,
              },
        );
        break;
      }
      case 'step.started': {
        const p = e.payload;
        const continued = step(p.messageId, (s) => ({ ...s, status: 'running', finish: null, endedSeq: null, durationMs: null }));
        if (!continued)
          push<StepEntry>({
            kind: 'step',
            ...base(e),
            executionId: p.executionId,
            messageId: p.messageId,
            step: p.step,
            status: 'running',
            finish: null,
            usage: null,
            error: null,
            recoveredReason: null,
            parts: [],
            endedSeq: null,
            durationMs: null,
          });
        break;
      }
      case 'text.streamed': {
        // what streamed so far, recorded (a restart: the model request was sent again, the part starts over)
        const { messageId, partId, text, restart } = e.payload;
        step(messageId, (s) => {
          const at = s.parts.findIndex((x) => x.type === 'text' && x.partId === partId);
          const before = at < 0 || restart ? undefined : (s.parts[at] as { text: Bounded }).text;
          const part: StepPart = { type: 'text', partId, seq: e.seq, text: appendBounded(before, text), partial: true };
          return { ...s, parts: at < 0 ? [...s.parts, part] : s.parts.map((x, i) => (i === at ? part : x)) };
        });
        break;
      }
      case 'text.completed':
      case 'reasoning.completed': {
        const { messageId, partId, text } = e.payload;
        const part: StepPart = { type: e.type === 'text.completed' ? 'text' : 'reasoning', partId, seq: e.seq, text: boundText(text) };
        step(messageId, (s) => {
          const at = s.parts.findIndex((x) => x.type !== 'tool' && x.partId === partId);
          return { ...s, parts: at < 0 ? [...s.parts, part] : s.parts.map((x, i) => (i === at ? part : x)) };
        });
        break;
      }
      case 'tool.called': {
        const p = e.payload;
        const part: ToolPart = {
          type: 'tool',
          callId: p.callId,
          name: p.name,
          seq: e.seq,
          input: boundValue(p.input) ?? null,
          durable: p.durable,
          idempotencyKey: p.idempotencyKey ?? null,
          state: p.started ? 'running' : 'called',
          output: null,
          error: null,
          startedAt: p.started ? e.time : null,
          endedSeq: null,
          durationMs: null,
          ranIn: null,
          approval: null,
        };
        step(p.messageId, (s) => ({ ...s, parts: [...s.parts.filter((x) => !(x.type === 'tool' && x.callId === p.callId)), part] }));
        break;
      }
      case 'tool.started':
        tool(e.payload.messageId, e.payload.callId, (p, s) => ({
          ...p,
          state: 'running',
          startedAt: e.time,
          ranIn: e.payload.executionId === s.executionId ? null : e.payload.executionId,
        }));
        break;
      case 'tool.succeeded':
      case 'tool.failed': {
        const p = e.payload;
        tool(p.messageId, p.callId, (part, s) => ({
          ...part,
          state: e.type === 'tool.succeeded' ? 'succeeded' : 'failed',
          output: e.type === 'tool.succeeded' ? (boundValue(e.payload.output) ?? null) : null,
          error: e.type === 'tool.failed' ? boundError(e.payload.error) : null,
          endedSeq: e.seq,
          durationMs: part.startedAt === null ? null : e.time - part.startedAt,
          ranIn: part.ranIn ?? (p.executionId === s.executionId ? null : p.executionId),
        }));
        break;
      }
      case 'wait.started': {
        const p = e.payload;
        turn(p.executionId, (t) => ({ ...t, waitingFor: [...t.waitingFor, { kind: p.kind, name: p.name, tool: p.tool ?? null }] }));
        if (p.kind === 'approval' && p.messageId && p.callId) {
          tool(p.messageId, p.callId, (part) => ({
            ...part,
            state: 'awaiting_approval',
            approval: { sinceSeq: e.seq, since: e.time, outcome: null, reason: null, resolvedSeq: null, waitedMs: null },
          }));
          break;
        }
        push<WaitEntry>({
          kind: 'wait',
          ...base(e),
          executionId: p.executionId,
          waitKind: p.kind,
          name: p.name,
          until: p.until ?? null,
          outcome: null,
          reason: null,
          data: null,
          resolvedSeq: null,
          waitedMs: null,
          child: p.child?.sessionId ?? null,
          answer: null,
        });
        break;
      }
      case 'wait.resolved': {
        const p = e.payload;
        if (p.kind === 'approval' && p.messageId && p.callId) {
          const outcome = p.outcome === 'approved' || p.outcome === 'denied' ? p.outcome : 'cancelled';
          tool(p.messageId, p.callId, (part) => ({
            ...part,
            state: part.state === 'awaiting_approval' || part.state === 'called' ? outcome : part.state,
            approval: {
              sinceSeq: part.approval?.sinceSeq ?? e.seq,
              since: part.approval?.since ?? e.time,
              outcome,
              reason: p.reason ?? null,
              ...(p.actor === undefined ? {} : { actor: p.actor }),
              resolvedSeq: e.seq,
              waitedMs: part.approval ? e.time - part.approval.since : null,
            },
          }));
          break;
        }
        update(
          'wait',
          null,
          (w) => w.waitKind === p.kind && w.name === p.name && w.outcome === null,
          (w) => ({
            ...w,
            outcome: p.outcome,
            reason: p.reason ?? null,
            data: boundValue(p.data) ?? null,
            ...(p.actor === undefined ? {} : { actor: p.actor }),
            resolvedSeq: e.seq,
            waitedMs: e.time - w.time,
            answer: p.kind === 'session' ? callAnswer(p.data) : null,
          }),
        );
        break;
      }
      case 'step.ended':
        step(e.payload.messageId, (s) => ({
          ...s,
          status: 'completed',
          finish: e.payload.finish,
          usage: e.payload.usage ?? null,
          endedSeq: e.seq,
          durationMs: e.time - s.time,
        }));
        break;
      case 'step.failed':
        step(e.payload.messageId, (s) => ({ ...s, status: 'failed', error: boundError(e.payload.error), endedSeq: e.seq, durationMs: e.time - s.time }));
        break;
      case 'step.recovered':
        step(e.payload.messageId, (s) => ({ ...s, status: 'recovered', recoveredReason: e.payload.reason, endedSeq: e.seq, durationMs: e.time - s.time }));
        break;
      case 'compaction.started':
        push<CompactionEntry>({
          kind: 'compaction',
          ...base(e),
          executionId: e.payload.executionId,
          messageId: e.payload.messageId,
          reason: e.payload.reason,
          summary: null,
          usage: null,
          endedSeq: null,
          durationMs: null,
        });
        break;
      case 'compaction.completed': {
        const p = e.payload;
        const done = { summary: boundText(p.summary), usage: p.usage ?? null, endedSeq: e.seq };
        const found = update(
          'compaction',
          `c${p.messageId}`,
          (x) => x.messageId === p.messageId,
          (x) => ({ ...x, ...done, durationMs: e.time - x.time }),
        );
        if (!found)
          push<CompactionEntry>({
            kind: 'compaction',
            ...base(e),
            executionId: p.executionId,
            messageId: p.messageId,
            reason: null,
            ...done,
            durationMs: null,
          });
        break;
      }
      case 'session.forked': {
        const p = e.payload;
        for (const item of p.transcript) push<ConversationEntry>(forkedEntry(item, e));
        queued = [];
        push<ForkEntry>({ kind: 'fork', ...base(e), from: p.from, items: p.transcript.length });
        break;
      }
      case 'recovery.started':
        push<RecoveryEntry>({
          kind: 'recovery',
          ...base(e),
          executionId: e.payload.executionId,
          completedSeq: null,
          phase: null,
          continuationInputId: null,
          error: null,
          wakeAttempts: 0,
          wakeDeliveredSeq: null,
          wakeFailed: null,
        });
        break;
      case 'recovery.completed': {
        const p = e.payload;
        recovery(p.executionId, (r) => ({
          ...r,
          completedSeq: e.seq,
          phase: p.phase,
          continuationInputId: p.continuationInputId,
          error: p.error ? boundError(p.error) : null,
        }));
        turn(p.executionId, (t) => (t.outcome !== null ? t : { ...t, outcome: 'interrupted', endedSeq: e.seq, durationMs: e.time - t.time }));
        break;
      }
      case 'recovery.wake_requested':
        recovery(e.payload.executionId, (r) => ({ ...r, wakeAttempts: Math.max(r.wakeAttempts, e.payload.attempt) }));
        break;
      case 'recovery.wake_delivered':
        recovery(e.payload.executionId, (r) => ({ ...r, wakeDeliveredSeq: e.seq }));
        break;
      case 'recovery.wake_failed': {
        const p = e.payload;
        recovery(p.executionId, (r) => ({
          ...r,
          wakeAttempts: Math.max(r.wakeAttempts, p.attempt),
          wakeFailed: { attempt: p.attempt, error: boundError(p.error), parked: p.parked },
        }));
        break;
      }
      default:
        break;
    }
  }
  kept.length = entries.length; // the entries it came from have outgrown it now
  placesOf.set(entries, kept);
  return { sessionId: c.sessionId, seq, eventId, time, entries, queued, ...(first > 0 ? { first } : {}) };

  function recovery(executionId: string, change: (r: RecoveryEntry) => Omit<RecoveryEntry, 'changedSeq'>): void {
    update('recovery', `r${executionId}`, (r) => r.executionId === executionId, change);
  }
}

const TOOL_DONE = new Set(['succeeded', 'failed', 'denied', 'cancelled']);

/**
 * Whether no later event can change an entry the conversation has: nothing queued, every turn ended
 * (one that waits, with its waits resolved), every step, tool call, wait, compaction and recovery
 * (with its wake) finished.
 * Entries are then final: a fold may start after them (a tail, `first` = their count).
 */
export function isSettled(c: Conversation): boolean {
  if (c.queued.length > 0) return false;
  return c.entries.every((e) => {
    switch (e.kind) {
      case 'turn':
        return e.outcome !== null; // one that waits is over once its waits are (a continuation resumes it)
      case 'step':
        return e.status !== 'running' && e.parts.every((p) => p.type !== 'tool' || TOOL_DONE.has(p.state));
      case 'wait':
        return e.outcome !== null;
      case 'compaction':
        return e.endedSeq !== null;
      case 'recovery':
        return e.completedSeq !== null && (e.continuationInputId === null || e.wakeDeliveredSeq !== null);
      default:
        return true;
    }
  });
}
