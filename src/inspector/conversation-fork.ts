/**
 * A fork's first event (`session.forked`) carries the source's conversation up to the fork point as
 * the model runner's transcript items; the conversation view shows them as its own entries, at the
 * fork's sequence and marked `forked` (they have no times of their own). Pure.
 */
import type { RecordedError, TranscriptItemSchema } from '../events/catalog.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { z } from 'zod';
import { boundError, boundText, boundValue, partView } from './bounded.ts';
import type { ConversationEntry, Draft, StepPart } from './conversation-types.ts';

type Item = z.infer<typeof TranscriptItemSchema>;

/** An item of a fork's transcript as an entry (at the fork's sequence, marked `forked`). */
export function forkedEntry(item: Item, e: SessionEvent): Draft<ConversationEntry> {
  const at = { seq: e.seq, time: e.time, changedSeq: e.seq, forked: true as const };
  const error = (err: RecordedError | undefined) => (err ? boundError(err) : null);
  switch (item.type) {
    case 'user':
      return {
        kind: 'prompt',
        ...at,
        inputId: item.inputId,
        state: 'in_turn',
        source: item.continues ? 'recovery' : 'user',
        delivery: item.delivery ?? 'queue',
        admittedSeq: e.seq,
        admittedAt: e.time,
        executionId: item.executionId,
        text: boundText(item.text),
        parts: item.parts ? item.parts.map(partView) : null,
        continues: item.continues
          ? {
              reason: item.continues.reason,
              executionId: item.continues.executionId,
              phase: item.continues.phase,
              retryTools: item.continues.retryTools.map((t) => t.name),
            }
          : null,
        notBefore: null,
        droppedReason: null,
      };
    case 'summary':
      return {
        kind: 'compaction',
        ...at,
        executionId: item.executionId,
        messageId: item.messageId,
        reason: null,
        summary: boundText(item.summary),
        usage: null,
        endedSeq: e.seq,
        durationMs: null,
      };
    default:
      return {
        kind: 'step',
        ...at,
        executionId: item.executionId,
        messageId: item.messageId,
        step: null,
        status: item.status,
        finish: item.finish ?? null,
        usage: item.usage ?? null,
        error: error(item.error),
        recoveredReason: null,
        endedSeq: e.seq,
        durationMs: null,
        parts: item.parts.map(
          (p): StepPart =>
            p.type === 'tool'
              ? {
                  type: 'tool',
                  callId: p.callId,
                  name: p.name,
                  seq: e.seq,
                  input: boundValue(p.input) ?? null,
                  durable: p.durable,
                  idempotencyKey: p.idempotencyKey ?? null,
                  state: p.state,
                  output: boundValue(p.output) ?? null,
                  error: error(p.error),
                  startedAt: null,
                  endedSeq: null,
                  durationMs: null,
                  ranIn: null,
                  approval: p.decision
                    ? { sinceSeq: e.seq, since: e.time, outcome: p.decision.outcome, reason: p.decision.reason ?? null, resolvedSeq: null, waitedMs: null }
                    : null,
                }
              : { type: p.type, partId: p.partId, seq: e.seq, text: boundText(p.text) },
        ),
      };
  }
}
