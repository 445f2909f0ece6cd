/**
 * One chat turn as the AI SDK's UI message stream (what `useChat` reads): a pure fold from the
 * session's events to the stream's chunks, following the turn through recoveries, hand-backs and
 * waits (why: docs/gateway.md#the-chat-streams-fold).
 */
import type { LiveEvent } from '../events/live-bus.ts';
import { resumeInputId } from '../input/resolve.ts';

/** A chunk of the UI message stream (the AI SDK's `UIMessageChunk`, as JSON). */
export type UIChunk = { type: string } & Record<string, unknown>;

type Event = Pick<LiveEvent, 'type' | 'payload'> & { seq?: number };

const HELD_DELTAS = 2000;

export interface ChatFold {
  /** The chunks this event adds (none for events of other turns). */
  feed(event: Event): UIChunk[];
  readonly done: boolean;
}

export interface ChatFoldOptions {
  inputIds: readonly string[];
  messageId: string;
  openedAtSeq: number;
  /** End the message at a settle `waiting` (default: follow the turn through its resume). */
  endAtWait?: boolean;
  /**
   * A stream that answers these approval calls: nothing shows until the execution that asked for
   * them settles waiting; then its decisions and its resumed turn do.
   */
  answersTo?: readonly string[];
  /** End the message once the log is read up to here (an answer that leaves the turn waiting for others). */
  endAtSeq?: number;
}

export function chatFold(options: ChatFoldOptions): ChatFold {
  const inputs = new Set(options.inputIds);
  const executions = new Set<string>();
  const answered = new Set(options.answersTo ?? []);
  let asking: string | undefined; // the execution that asked for the answered calls
  const asked = new Set<string>(); // approval calls asked for and not decided yet
  let othersWaited = false; // the turn waits for something other than its session calls (which no reader answers)
  const live = new Set<string>(); // messages whose step began after the stream opened
  const open = new Map<string, 'text' | 'reasoning'>(); // part id -> kind, started in the stream
  const streamed = new Map<string, string>(); // part id -> text sent
  const stepSeen = new Set<string>(); // messages whose step.started was folded
  const held = new Map<string, Event[]>(); // message id -> deltas that came before its step.started
  let heldCount = 0;
  const restarts = new Map<string, number>(); // part id -> how often a replayed part started over
  const partIdOf = (partId: string) => (restarts.has(partId) ? `${partId}-${restarts.get(partId)}` : partId);
  let started = false;
  let inStep = false;
  let done = false;

  const out: UIChunk[] = [];
  const startMessage = () => {
    if (started) return;
    started = true;
    out.push({ type: 'start', messageId: options.messageId });
  };
  const endStep = () => {
    for (const [id, kind] of open) out.push({ type: `${kind}-end`, id });
    open.clear();
    if (inStep) out.push({ type: 'finish-step' });
    inStep = false;
  };
  const finish = (error?: string) => {
    endStep();
    if (error) out.push({ type: 'error', errorText: error });
    out.push({ type: 'finish' });
    done = true;
  };
  const delta = (kind: 'text' | 'reasoning', p: { messageId: string; partId: string; delta: string }) => {
    if (!live.has(p.messageId)) return; // a step that began before the stream opened: its text comes whole
    if (!open.has(p.partId)) {
      open.set(p.partId, kind);
      out.push({ type: `${kind}-start`, id: p.partId });
    }
    streamed.set(p.partId, (streamed.get(p.partId) ?? '') + p.delta);
    out.push({ type: `${kind}-delta`, id: p.partId, delta: p.delta });
  };
  const completed = (kind: 'text' | 'reasoning', q: { partId: string; text: string }) => {
    const p = { ...q, partId: partIdOf(q.partId) };
    const sent = streamed.get(p.partId);
    if (!open.has(p.partId)) out.push({ type: `${kind}-start`, id: p.partId });
    // what the deltas missed (one dropped on the way), when it only adds; the committed text holds
    if (sent === undefined) out.push({ type: `${kind}-delta`, id: p.partId, delta: p.text });
    else if (p.text.startsWith(sent) && p.text.length > sent.length) out.push({ type: `${kind}-delta`, id: p.partId, delta: p.text.slice(sent.length) });
    out.push({ type: `${kind}-end`, id: p.partId });
    open.delete(p.partId);
    streamed.delete(p.partId);
  };

  const handle = (e: Event): void => {
    const p = e.payload as Record<string, unknown> & { executionId?: string };
    if (answered.size > 0) {
      if (e.type === 'wait.started' && answered.has(p.callId as string)) asking = p.executionId;
      else if (e.type === 'execution.settled' && p.executionId === asking && p.outcome === 'waiting') {
        answered.clear();
        executions.add(asking!);
        inputs.add(resumeInputId(asking!));
      }
      return;
    }
    if (e.type === 'input.promoted') {
      if (!inputs.has(p.inputId as string)) return;
      executions.add(p.executionId as string);
      startMessage();
      return;
    }
    if (e.type === 'input.dropped') {
      if ((p.inputIds as string[]).some((i) => inputs.has(i)) && executions.size === 0) finish('The prompt was dropped before it ran.');
      return;
    }
    const exec = p.executionId;
    if (exec === undefined) return;
    const isDelta = e.type === 'text.delta' || e.type === 'reasoning.delta';
    if (isDelta && !stepSeen.has(p.messageId as string)) {
      // live events can overtake the log: keep it until its step (and execution) is known
      if (heldCount < HELD_DELTAS) {
        held.set(p.messageId as string, [...(held.get(p.messageId as string) ?? []), e]);
        heldCount++;
      }
      return;
    }
    if (!executions.has(exec)) return;
    switch (e.type) {
      case 'step.started':
        endStep();
        inStep = true;
        if ((e.seq ?? 0) > options.openedAtSeq) live.add(p.messageId as string);
        stepSeen.add(p.messageId as string);
        out.push({ type: 'start-step' });
        for (const d of held.get(p.messageId as string) ?? []) handle(d);
        heldCount -= held.get(p.messageId as string)?.length ?? 0;
        held.delete(p.messageId as string);
        return;
      case 'text.delta':
      case 'reasoning.delta':
        delta(e.type === 'text.delta' ? 'text' : 'reasoning', p as never);
        return;
      case 'text.streamed': {
        // what a running step has streamed so far, recorded in the log: shown by a replay (its deltas
        // are gone); a live stream already showed it as deltas. A restart (the model request sent
        // again) starts the part over as a new part.
        const q = p as unknown as { messageId: string; partId: string; text: string; restart: boolean };
        if (live.has(q.messageId)) return;
        if (q.restart && open.has(q.partId)) {
          out.push({ type: 'text-end', id: q.partId });
          open.delete(q.partId);
          restarts.set(q.partId, (restarts.get(q.partId) ?? 0) + 1);
        }
        const id = partIdOf(q.partId);
        if (!open.has(id)) {
          open.set(id, 'text');
          out.push({ type: 'text-start', id });
        }
        streamed.set(id, (streamed.get(id) ?? '') + q.text);
        out.push({ type: 'text-delta', id, delta: q.text });
        return;
      }
      case 'turn.interrupted':
        // the owner is gone: its open parts end here (the continuation goes on in new ones)
        endStep();
        return;
      case 'text.completed':
      case 'reasoning.completed':
        completed(e.type === 'text.completed' ? 'text' : 'reasoning', p as never);
        return;
      case 'tool.called':
        out.push({ type: 'tool-input-available', toolCallId: p.callId, toolName: p.name, input: p.input ?? null });
        return;
      case 'tool.succeeded':
        out.push({ type: 'tool-output-available', toolCallId: p.callId, output: p.output ?? null });
        return;
      case 'tool.failed':
        out.push({ type: 'tool-output-error', toolCallId: p.callId, errorText: String((p.error as { message?: string })?.message ?? 'the tool failed') });
        return;
      case 'wait.started':
        if (p.kind !== 'session') othersWaited = true;
        if (p.kind === 'approval' && p.callId) {
          asked.add(p.callId as string);
          out.push({ type: 'tool-approval-request', approvalId: p.callId, toolCallId: p.callId });
        }
        return;
      case 'wait.resolved': {
        if (p.outcome === 'cancelled') {
          // a waiting turn cancelled (its waits all end in one append): every call undecided says so
          const why = `The turn was cancelled before a decision${p.reason ? ` (${p.reason})` : ''}.`;
          for (const callId of asked) out.push({ type: 'tool-output-error', toolCallId: callId, errorText: why });
          finish(why);
          return;
        }
        if (p.kind !== 'approval' || !p.callId) return;
        asked.delete(p.callId as string);
        if (p.outcome === 'denied') out.push({ type: 'tool-output-denied', toolCallId: p.callId });
        return;
      }
      case 'step.ended':
      case 'step.failed':
      case 'step.recovered':
        endStep();
        return;
      case 'recovery.completed':
        // the turn goes on in its continuation (a new input, run by a new execution)
        if (p.continuationInputId) inputs.add(p.continuationInputId as string);
        else finish('The turn was interrupted and could not be continued.');
        return;
      case 'execution.cancelled':
        finish(`The turn was cancelled${p.actor ? ` by ${p.actor}` : ''}${p.reason ? `: ${p.reason}` : ''}.`);
        return;
      case 'execution.settled': {
        const outcome = p.outcome as string;
        if (outcome === 'released') {
          endStep(); // handed back: the prompt is taken again by the next execution
          return;
        }
        if (outcome === 'waiting') {
          if (options.endAtWait && othersWaited) {
            finish(); // its reader answers with a new request
            return;
          }
          endStep(); // the turn goes on in the input that resumes it, once its waits are decided
          inputs.add(resumeInputId(exec));
          return;
        }
        finish(outcome === 'failed' ? String((p.error as { message?: string })?.message ?? 'The turn failed.') : undefined);
        return;
      }
    }
  };

  return {
    feed(event) {
      if (done) return [];
      handle(event);
      if (!done && options.endAtSeq !== undefined && (event.seq ?? -1) >= options.endAtSeq) finish();
      return out.splice(0);
    },
    get done() {
      return done;
    },
  };
}
