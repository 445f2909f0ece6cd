/**
 * A session's transcript, folded from committed events (pure): the conversation a model runner sends,
 * items in the order they joined it; a compaction's summary replaces what came before but the
 * compacting turn's prompts (why: docs/architecture.md#design-notes-the-transcript).
 */
import type { Continuation, Delivery, PromptPart, RecordedError, TranscriptItemSchema, Usage } from './catalog.ts';
import { promptText } from './prompt.ts';
import type { SessionEvent } from './envelope.ts';
import type { z } from 'zod';

export type TranscriptPart =
  | { type: 'text'; partId: string; text: string }
  | { type: 'reasoning'; partId: string; text: string }
  | {
      type: 'tool';
      callId: string;
      name: string;
      input: unknown;
      durable: boolean;
      idempotencyKey?: string;
      /**
       * `failed` with error type `interrupted` or `released`: the call was sealed by a recovery or a
       * hand-back. A call that needs approval: `awaiting_approval`, then `approved` (then running in
       * the resumed turn), `denied` or `cancelled`, with the person's `decision`.
       */
      state: 'called' | 'awaiting_approval' | 'approved' | 'denied' | 'cancelled' | 'running' | 'succeeded' | 'failed';
      output?: unknown;
      /** A result too large for the event, stored beside the log as JSON text (`output` is then absent; the model runner reads it). */
      outputBlob?: { sha256: string; size: number; mediaType: string };
      error?: RecordedError;
      decision?: { outcome: 'approved' | 'denied' | 'cancelled'; reason?: string };
      /** A session tool call (`defineSessionTool`): the child session that runs it (`running` until its answer is the result). */
      child?: string;
    };

export type TranscriptItem =
  /** `text`: the prompt as text (`promptText`); `parts`: a prompt of parts as admitted (absent for a string prompt). */
  | { type: 'user'; inputId: string; executionId: string; text: string; parts?: PromptPart[]; delivery?: Delivery; continues?: Continuation }
  | {
      type: 'assistant';
      messageId: string;
      executionId: string;
      status: 'running' | 'completed' | 'failed' | 'recovered';
      parts: TranscriptPart[];
      finish?: string;
      error?: RecordedError;
      usage?: Usage;
    }
  | { type: 'summary'; messageId: string; executionId: string; summary: string };

export interface Transcript {
  /** The sequence of the last event folded (0 before any). */
  readonly seq: number;
  readonly items: readonly TranscriptItem[];
  /** Admitted prompts not yet promoted into a turn (they join `items` when promoted). */
  readonly waiting: ReadonlyMap<string, { text: string; parts?: PromptPart[]; delivery?: Delivery; continues?: Continuation }>;
}

export const emptyTranscript: Transcript = { seq: 0, items: [], waiting: new Map() };

/** Folds committed events (in sequence order) into a transcript. */
export function foldTranscript(t: Transcript, events: readonly SessionEvent[]): Transcript {
  if (events.length === 0) return t;
  const items = t.items.slice();
  const waiting = new Map(t.waiting);
  let seq = t.seq;
  /** The assistant item of a message (the latest with that id), replaced by a changed copy. */
  const assistant = (messageId: string, change: (a: Extract<TranscriptItem, { type: 'assistant' }>) => TranscriptItem) => {
    for (let i = items.length - 1; i >= 0; i--) {
      const item = items[i]!;
      if (item.type === 'assistant' && item.messageId === messageId) {
        items[i] = change(item);
        return;
      }
    }
  };
  const withPart = (messageId: string, part: TranscriptPart, same: (p: TranscriptPart) => boolean) =>
    assistant(messageId, (a) => {
      const at = a.parts.findIndex(same);
      const parts = a.parts.slice();
      if (at < 0) parts.push(part);
      else parts[at] = part;
      return { ...a, parts };
    });
  const tool = (messageId: string, callId: string, change: (p: Extract<TranscriptPart, { type: 'tool' }>) => TranscriptPart) =>
    assistant(messageId, (a) => ({
      ...a,
      parts: a.parts.map((p) => (p.type === 'tool' && p.callId === callId ? change(p) : p)),
    }));
  for (const e of events) {
    seq = e.seq;
    switch (e.type) {
      case 'input.admitted':
        waiting.set(e.payload.inputId, {
          text: promptText(e.payload.prompt),
          ...(typeof e.payload.prompt === 'string' ? {} : { parts: e.payload.prompt }),
          delivery: e.payload.delivery,
          ...(e.payload.continues ? { continues: e.payload.continues } : {}),
        });
        break;
      case 'input.promoted': {
        const input = waiting.get(e.payload.inputId);
        if (!input) break; // admitted before the transcript's start (not folded): nothing to say
        waiting.delete(e.payload.inputId);
        items.push({ type: 'user', inputId: e.payload.inputId, executionId: e.payload.executionId, ...input });
        break;
      }
      case 'step.started': {
        const { messageId, executionId } = e.payload;
        if (items.some((i) => i.type === 'assistant' && i.messageId === messageId))
          assistant(messageId, (a) => ({ ...a, status: 'running' })); // a continued step
        else items.push({ type: 'assistant', messageId, executionId, status: 'running', parts: [] });
        break;
      }
      case 'text.streamed': {
        // the text as it streamed (what an interrupted step keeps); text.completed replaces it
        const { messageId, partId, text, restart } = e.payload;
        assistant(messageId, (a) => {
          const at = a.parts.findIndex((p) => p.type === 'text' && p.partId === partId);
          const parts = a.parts.slice();
          const before = at < 0 || restart ? '' : (parts[at] as { text: string }).text;
          const part: TranscriptPart = { type: 'text', partId, text: before + text };
          if (at < 0) parts.push(part);
          else parts[at] = part;
          return { ...a, parts };
        });
        break;
      }
      case 'text.completed':
      case 'reasoning.completed': {
        const { messageId, partId, text } = e.payload;
        const type = e.type === 'text.completed' ? 'text' : 'reasoning';
        withPart(messageId, { type, partId, text }, (p) => p.type !== 'tool' && p.partId === partId);
        break;
      }
      case 'tool.called': {
        const { messageId, callId, name, input, durable, idempotencyKey, started } = e.payload;
        withPart(
          messageId,
          { type: 'tool', callId, name, input, durable, ...(idempotencyKey ? { idempotencyKey } : {}), state: started ? 'running' : 'called' },
          (p) => p.type === 'tool' && p.callId === callId,
        );
        break;
      }
      case 'tool.started':
        tool(e.payload.messageId, e.payload.callId, (p) => ({ ...p, state: 'running' }));
        break;
      case 'wait.started':
        if (e.payload.kind === 'approval' && e.payload.messageId && e.payload.callId)
          tool(e.payload.messageId, e.payload.callId, (p) => ({ ...p, state: 'awaiting_approval' }));
        // a session tool call: the child session runs it
        if (e.payload.kind === 'session' && e.payload.messageId && e.payload.callId && e.payload.child)
          tool(e.payload.messageId, e.payload.callId, (p) => ({ ...p, state: 'running', child: e.payload.child!.sessionId }));
        break;
      case 'wait.resolved': {
        const { kind, messageId, callId, outcome, reason } = e.payload;
        if (kind !== 'approval' || !messageId || !callId || (outcome !== 'approved' && outcome !== 'denied' && outcome !== 'cancelled')) break;
        tool(messageId, callId, (p) => ({ ...p, state: outcome, decision: { outcome, ...(reason === undefined ? {} : { reason }) } }));
        break;
      }
      case 'tool.succeeded':
        tool(e.payload.messageId, e.payload.callId, (p) => ({
          ...p,
          state: 'succeeded',
          output: e.payload.output,
          ...(e.payload.outputBlob ? { outputBlob: e.payload.outputBlob } : {}),
        }));
        break;
      case 'tool.failed':
        tool(e.payload.messageId, e.payload.callId, (p) => ({ ...p, state: 'failed', error: e.payload.error }));
        break;
      case 'step.ended':
        assistant(e.payload.messageId, (a) => ({
          ...a,
          status: 'completed',
          finish: e.payload.finish,
          ...(e.payload.usage ? { usage: e.payload.usage } : {}),
        }));
        break;
      case 'step.failed':
        assistant(e.payload.messageId, (a) => ({ ...a, status: 'failed', error: e.payload.error }));
        break;
      case 'step.recovered':
        assistant(e.payload.messageId, (a) => ({ ...a, status: 'recovered' }));
        break;
      case 'session.forked':
        // a fork starts with the source's conversation up to the fork point
        items.length = 0;
        items.push(...(e.payload.transcript as TranscriptItem[]));
        waiting.clear();
        break;
      case 'compaction.completed': {
        const { executionId, messageId, summary } = e.payload;
        const kept = items.filter((i) => i.type === 'user' && i.executionId === executionId);
        items.length = 0;
        items.push({ type: 'summary', messageId, executionId, summary }, ...kept);
        break;
      }
      default:
        break;
    }
  }
  return { seq, items, waiting };
}

/** The text of an assistant item's text parts, joined (its partial answer when it was interrupted). */
export function assistantText(item: Extract<TranscriptItem, { type: 'assistant' }>): string {
  return item.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
}

/** A transcript item is what a fork's `session.forked` stores (checked at compile time, both ways). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _sameItems: Same<TranscriptItem, z.infer<typeof TranscriptItemSchema>> = true;
void _sameItems;
