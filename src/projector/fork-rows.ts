/**
 * The message rows a forked session starts with: its `session.forked` transcript as rows of the
 * shapes message-rows.ts declares (a user message per prompt, an assistant message per step, a
 * compaction per summary), each at the fork event's sequence and time. Pure.
 */
import type { SessionEvent } from '../events/envelope.ts';
import type { TranscriptItem, TranscriptPart } from '../events/transcript.ts';
import type { AssistantData, CachedMessage, CompactionData, TextPart, ToolData, ToolStatus, UserData } from './message-rows.ts';

/** A transcript tool state as a message row's tool status. */
const TOOL_STATUS: Record<Extract<TranscriptPart, { type: 'tool' }>['state'], ToolStatus> = {
  called: 'pending',
  awaiting_approval: 'awaiting_approval',
  approved: 'approved',
  denied: 'denied',
  cancelled: 'cancelled',
  running: 'running',
  succeeded: 'completed',
  failed: 'error',
};

export function forkedMessages(e: SessionEvent<'session.forked'>): CachedMessage[] {
  const steps = new Map<string, number>(); // execution id -> steps seen (an assistant row's `step`)
  const row = (id: string, type: CachedMessage['type'], data: unknown): CachedMessage => ({
    id,
    session_id: e.sessionId,
    type,
    seq: e.seq,
    time_created: e.time,
    time_updated: e.time,
    data,
  });
  return (e.payload.transcript as TranscriptItem[]).map((item) => {
    switch (item.type) {
      case 'user': {
        const data: UserData = { prompt: item.parts ?? item.text, delivery: item.delivery ?? 'queue', executionId: item.executionId };
        return row(item.inputId, 'user', data);
      }
      case 'summary': {
        const data: CompactionData = { executionId: item.executionId, reason: 'forked with its summary', status: 'completed', summary: item.summary };
        return row(item.messageId, 'compaction', data);
      }
      default: {
        const step = steps.get(item.executionId) ?? 0;
        steps.set(item.executionId, step + 1);
        const parts: TextPart[] = [];
        const tools: ToolData[] = [];
        for (const p of item.parts) {
          if (p.type !== 'tool') parts.push({ id: p.partId, type: p.type, text: p.text });
          else
            tools.push({
              callId: p.callId,
              name: p.name,
              input: p.input,
              durable: p.durable,
              ...(p.idempotencyKey ? { idempotencyKey: p.idempotencyKey } : {}),
              state: TOOL_STATUS[p.state],
              ...(p.output === undefined ? {} : { output: p.output }),
              ...(p.error ? { error: p.error } : {}),
              ...(p.decision ? { decision: { ...p.decision, time: e.time } } : {}),
            });
        }
        const data: AssistantData = {
          executionId: item.executionId,
          step,
          status: item.status,
          parts,
          tools,
          ...(item.finish ? { finish: item.finish } : {}),
          ...(item.usage ? { usage: item.usage } : {}),
          ...(item.error ? { error: item.error } : {}),
        };
        return row(item.messageId, 'assistant', data);
      }
    }
  });
}
