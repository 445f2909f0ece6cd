/**
 * How a child session's turn ended, read from its events (pure): the turn that ran the input a
 * parent's `callSession` admitted, followed through the executions that continue it (a recovery, a
 * hand-back, a resume after a wait), until one ends it: settled succeeded or failed, or cancelled.
 * Its text is the last step's text that the turn completed. Undefined while the turn goes on.
 */
import type { SessionEvent } from '../events/envelope.ts';

/** What a parent's session call is given when the child's turn ends (the wait's `data`). */
export interface ChildTurnEnd {
  outcome: 'succeeded' | 'failed' | 'cancelled';
  /** The child's final answer: the text of its turn's last step that has text ('' when none). */
  text: string;
  /** The execution that ended the turn. */
  executionId: string;
  /** Why a failed or cancelled turn ended. */
  error?: string;
}

/** The end of the turn that ran `inputId`, from the child's events (at least those from its admission on); undefined while it runs or waits. */
export function childTurnEnd(events: readonly SessionEvent[], inputId: string): ChildTurnEnd | undefined {
  const executions = new Set<string>();
  const continuations = new Set<string>([inputId]);
  /** Executions that settled `waiting`: a cancel of such a turn ends its waits, not its execution. */
  const waiting = new Set<string>();
  let lastText: string[] = [];
  const texts = new Map<string, string[]>();
  for (const e of events) {
    switch (e.type) {
      case 'input.promoted':
        if (continuations.has(e.payload.inputId)) executions.add(e.payload.executionId);
        break;
      case 'input.admitted': {
        const from = e.payload.continues?.executionId;
        if (from !== undefined && executions.has(from)) continuations.add(e.payload.inputId);
        break;
      }
      case 'text.completed': {
        if (!executions.has(e.payload.executionId)) break;
        const parts = texts.get(e.payload.messageId) ?? [];
        parts.push(e.payload.text);
        texts.set(e.payload.messageId, parts);
        lastText = parts;
        break;
      }
      case 'execution.settled': {
        const p = e.payload;
        if (!executions.has(p.executionId)) break;
        if (p.outcome === 'waiting') waiting.add(p.executionId);
        if (p.outcome === 'succeeded' || p.outcome === 'failed')
          return {
            outcome: p.outcome,
            text: lastText.join(''),
            executionId: p.executionId,
            ...(p.outcome === 'failed' ? { error: p.error?.message ?? 'the turn failed' } : {}),
          };
        break;
      }
      case 'execution.cancelled':
        if (executions.has(e.payload.executionId))
          return { outcome: 'cancelled', text: lastText.join(''), executionId: e.payload.executionId, error: e.payload.reason ?? 'cancelled' };
        break;
      case 'wait.resolved':
        // a waiting turn cancelled: its waits end cancelled, and the turn with them
        if (e.payload.outcome === 'cancelled' && waiting.has(e.payload.executionId))
          return { outcome: 'cancelled', text: lastText.join(''), executionId: e.payload.executionId, error: e.payload.reason ?? 'cancelled' };
        break;
    }
  }
  return undefined;
}
