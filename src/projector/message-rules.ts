/**
 * How events change session_message rows (assistant, user and compaction messages, tool calls and
 * approvals), and the fail-fast rules guarding them: a broken rule throws `inconsistent_stream`
 * naming the message. The rules: docs/architecture.md#design-notes-the-projector.
 */
import type { Prompt } from '../events/catalog.ts';
import type { SessionEvent } from '../events/envelope.ts';
import type { InputRow } from './input-rows.ts';
import { inconsistent } from './errors.ts';
import type { AssistantData, CachedMessage, CompactionData, MessageType, TextPart, ToolData, UserData, messageRows } from './message-rows.ts';

type Rows = ReturnType<typeof messageRows>;
type MessageEvent = SessionEvent & { payload: { executionId: string; messageId: string } };
type ToolEvent = SessionEvent<'tool.started' | 'tool.succeeded' | 'tool.failed'>;
type WaitEvent = SessionEvent<'wait.started' | 'wait.resolved'>;

export function messageRules(rows: Rows) {
  /** The message an event names, checked to be of `type` and of the event's session. */
  const existing = (e: MessageEvent, type: MessageType, missing: string): CachedMessage => {
    const { messageId } = e.payload;
    const m = rows.get(e.sessionId, messageId);
    if (!m) throw inconsistent(`${e.type} for message ${messageId}, which does not exist in session ${e.sessionId}: ${missing}.`, { messageId });
    checkSameMessage(e, m, type);
    return m;
  };

  /** The running assistant message an event names, of the event's execution. */
  const assistant = (e: MessageEvent, missing: string): CachedMessage & { data: AssistantData } => {
    const m = existing(e, 'assistant', missing) as CachedMessage & { data: AssistantData };
    sameExecution(e, m.data);
    return m;
  };

  const seal = (e: SessionEvent<'step.ended' | 'step.failed' | 'step.recovered'>, change: Partial<AssistantData>) => {
    const m = assistant(e, 'a step is sealed only after its step.started');
    running(e, m.data, 'a step is sealed once');
    rows.update(m, { ...m.data, ...change }, e.time);
  };

  /** A text or reasoning part (replaced when its part id comes again), only while the step runs. */
  const addPart = (e: SessionEvent<'text.completed' | 'reasoning.completed'>, type: TextPart['type']) => {
    const { partId, text } = e.payload;
    const m = assistant(e, `a message gets ${type} only after its step.started`);
    running(e, m.data, `${type} is added only while the step runs`);
    const part: TextPart = { id: partId, type, text };
    const parts = m.data.parts.slice();
    const at = indexOfPart(parts, partId);
    if (at < 0) parts.push(part);
    else parts[at] = part;
    rows.update(m, { ...m.data, parts }, e.time);
  };

  const tool = <E extends ToolEvent>(e: E, change: (e: E, t: ToolData) => ToolData) => {
    const { messageId, callId } = e.payload;
    const m = existing(
      e,
      'assistant',
      `a call is addressed by (message, call id) and needs its message's step.started and tool.called first`,
    ) as CachedMessage & {
      data: AssistantData;
    };
    const index = indexOfCall(m.data.tools, callId);
    const t = index < 0 ? undefined : m.data.tools[index]!;
    // an approved call runs in the execution that resumed its turn
    const resumed = t?.state === 'approved' || (t?.state === 'pending' && t.child !== undefined);
    const runner = t?.runBy ?? (resumed && e.type === 'tool.started' ? e.payload.executionId : m.data.executionId);
    if (runner !== e.payload.executionId) sameExecution(e, m.data);
    if (!t) throw inconsistent(`${e.type} for call ${callId} in message ${messageId}, which was never called: tool.called comes first.`, { messageId, callId });
    const tools = m.data.tools.slice();
    tools[index] = change(e, tools[index]!);
    rows.update(m, { ...m.data, tools }, e.time);
  };

  /** The approval call a wait names (none for other kinds of wait). */
  const approvalCall = (e: WaitEvent, change: (t: ToolData) => ToolData) => {
    const { kind, messageId, callId } = e.payload;
    if (kind !== 'approval') return;
    if (messageId === undefined || callId === undefined)
      throw inconsistent(`${e.type} of approval ${e.payload.name} names no call: an approval carries its messageId and callId.`, { name: e.payload.name });
    const m = existing(e as WaitEvent & MessageEvent, 'assistant', 'an approval waits for a call of an existing message');
    sameExecution(e as WaitEvent & MessageEvent, m.data as AssistantData);
    const data = m.data as AssistantData;
    const index = indexOfCall(data.tools, callId);
    if (index < 0)
      throw inconsistent(`${e.type} for call ${callId} in message ${messageId}, which was never called: tool.called comes first.`, { messageId, callId });
    const tools = data.tools.slice();
    tools[index] = change(tools[index]!);
    rows.update(m, { ...data, tools }, e.time);
  };

  /** A session tool call's wait: the call is pending on its child (its result comes in the execution that resumes the turn). */
  const sessionCall = (e: SessionEvent<'wait.started'>) => {
    const { messageId, callId, child } = e.payload;
    if (messageId === undefined || callId === undefined || child === undefined) return;
    const m = existing(e as WaitEvent & MessageEvent, 'assistant', 'a session tool call waits for a call of an existing message');
    sameExecution(e as WaitEvent & MessageEvent, m.data as AssistantData);
    const data = m.data as AssistantData;
    const index = indexOfCall(data.tools, callId);
    const t = data.tools[index];
    if (!t)
      throw inconsistent(`wait.started for call ${callId} in message ${messageId}, which was never called: tool.called comes first.`, { messageId, callId });
    if (t.state !== 'pending')
      throw inconsistent(`wait.started for call ${callId}, which is ${t.state}: only a call not yet started waits for a session.`, { callId });
    const tools = data.tools.slice();
    tools[index] = { ...t, child: child.sessionId };
    rows.update(m, { ...data, tools }, e.time);
  };

  return {
    waitStarted: (e: SessionEvent<'wait.started'>) =>
      e.payload.kind === 'session'
        ? sessionCall(e)
        : approvalCall(e, (t) => {
            if (t.state !== 'pending')
              throw inconsistent(`wait.started for call ${t.callId}, which is ${t.state}: only a call not yet started waits for approval.`, {
                callId: t.callId,
              });
            return { ...t, state: 'awaiting_approval' };
          }),

    waitResolved: (e: SessionEvent<'wait.resolved'>) =>
      approvalCall(e, (t) => {
        const outcome = e.payload.outcome;
        if (t.state !== 'awaiting_approval')
          throw inconsistent(`wait.resolved (${outcome}) for call ${t.callId}, which is ${t.state}: a call is decided once, while it awaits approval.`, {
            callId: t.callId,
          });
        if (outcome !== 'approved' && outcome !== 'denied' && outcome !== 'cancelled')
          throw inconsistent(`wait.resolved of approval ${t.callId} is ${outcome}: an approval is approved, denied or cancelled.`, { callId: t.callId });
        const decision = { outcome, time: e.time, ...(e.payload.reason === undefined ? {} : { reason: e.payload.reason }) };
        return { ...t, state: outcome, decision };
      }),

    /** The user message of a promoted input: id = input id, seq = the promotion's seq. */
    userPromoted(e: SessionEvent<'input.promoted'>, input: InputRow): void {
      const { inputId, executionId } = e.payload;
      const taken = rows.get(e.sessionId, inputId);
      if (taken) {
        throw inconsistent(
          `input.promoted of input ${inputId}: message id ${inputId} is already a ${taken.type} message of session ${taken.session_id}. User messages take their input's id, so input ids must not collide with message ids.`,
          { messageId: inputId },
        );
      }
      const data: UserData = { prompt: input.parts ? (JSON.parse(input.parts) as Prompt) : input.prompt, delivery: input.delivery, executionId };
      rows.insert({ id: inputId, session_id: e.sessionId, type: 'user', seq: e.seq, time_created: e.time, time_updated: e.time, data });
    },

    stepStarted(e: SessionEvent<'step.started'>): void {
      const { messageId, executionId, step } = e.payload;
      const m = rows.get(e.sessionId, messageId);
      if (!m) {
        const data: AssistantData = { executionId, step, status: 'running', parts: [], tools: [] };
        rows.insert({ id: messageId, session_id: e.sessionId, type: 'assistant', seq: e.seq, time_created: e.time, time_updated: e.time, data });
        return;
      }
      checkSameMessage(e, m, 'assistant');
      const data = m.data as AssistantData;
      sameExecution(e, data);
      running(e, data, 'a finished step is never restarted (a duplicate start); start a new message');
      rows.update(m, { ...data, status: 'running' }, e.time); // a continued step
    },

    stepEnded: (e: SessionEvent<'step.ended'>) =>
      seal(e, { status: 'completed', finish: e.payload.finish, ...(e.payload.usage ? { usage: e.payload.usage } : {}) }),
    stepFailed: (e: SessionEvent<'step.failed'>) => seal(e, { status: 'failed', error: e.payload.error }),
    stepRecovered: (e: SessionEvent<'step.recovered'>) => seal(e, { status: 'recovered', reason: e.payload.reason }),

    textCompleted: (e: SessionEvent<'text.completed'>) => addPart(e, 'text'),
    textStreamed(e: SessionEvent<'text.streamed'>): void {
      const { partId, text, restart } = e.payload;
      const m = assistant(e, 'a message gets text only after its step.started');
      running(e, m.data, 'text is added only while the step runs');
      const parts = m.data.parts.slice();
      const at = indexOfPart(parts, partId);
      const before = at < 0 || restart ? '' : parts[at]!.text;
      const part: TextPart = { id: partId, type: 'text', text: before + text };
      if (at < 0) parts.push(part);
      else parts[at] = part;
      rows.update(m, { ...m.data, parts }, e.time);
    },
    reasoningCompleted: (e: SessionEvent<'reasoning.completed'>) => addPart(e, 'reasoning'),

    toolCalled(e: SessionEvent<'tool.called'>): void {
      const { messageId, callId, name, input, durable, idempotencyKey, started } = e.payload;
      const m = assistant(e, 'a message gets tool calls only after its step.started');
      running(e, m.data, 'tools are called only while the step runs');
      const at = indexOfCall(m.data.tools, callId);
      if (at >= 0)
        throw inconsistent(
          `tool.called for call ${callId} in message ${messageId}, which was already called (as ${m.data.tools[at]!.name}): call ids are unique per message.`,
          { messageId, callId },
        );
      const t: ToolData = { callId, name, input, durable, ...(idempotencyKey === undefined ? {} : { idempotencyKey }), state: started ? 'running' : 'pending' };
      rows.update(m, { ...m.data, tools: [...m.data.tools, t] }, e.time);
    },

    toolStarted: (e: SessionEvent<'tool.started'>) => tool(e, startTool),
    toolSucceeded: (e: SessionEvent<'tool.succeeded'>) => tool(e, succeedTool),
    toolFailed: (e: SessionEvent<'tool.failed'>) => tool(e, failTool),

    compactionStarted(e: SessionEvent<'compaction.started'>): void {
      const { messageId, executionId, reason } = e.payload;
      const taken = rows.get(e.sessionId, messageId);
      if (taken)
        throw inconsistent(
          `compaction.started for message ${messageId}, which already exists (a ${taken.type} message of session ${taken.session_id}): message ids must be unique.`,
          { messageId },
        );
      const data: CompactionData = { executionId, reason, status: 'running' };
      rows.insert({ id: messageId, session_id: e.sessionId, type: 'compaction', seq: e.seq, time_created: e.time, time_updated: e.time, data });
    },

    compactionCompleted(e: SessionEvent<'compaction.completed'>): void {
      const { messageId, summary } = e.payload;
      const m = existing(e, 'compaction', 'a compaction completes only after its compaction.started');
      const data = m.data as CompactionData;
      sameExecution(e, data);
      if (data.status !== 'running')
        throw inconsistent(`compaction.completed for message ${messageId}, which is already ${data.status}: a compaction completes once.`, { messageId });
      rows.update(m, { ...data, status: 'completed', summary, ...(e.payload.usage ? { usage: e.payload.usage } : {}) }, e.time);
    },
  };
}

/** The message is of the type the event addresses (rows are looked up by session and id, so the session matches). */
function checkSameMessage(e: MessageEvent, m: CachedMessage, type: MessageType): void {
  const { messageId } = e.payload;
  if (m.type !== type) {
    throw inconsistent(
      `${e.type} for message ${messageId}, which is a ${m.type} message, not ${type === 'assistant' ? 'an assistant' : `a ${type}`} message: message ids must be unique.`,
      { messageId },
    );
  }
}

function sameExecution(e: MessageEvent, data: { executionId: string }): void {
  if (data.executionId !== e.payload.executionId) {
    throw inconsistent(
      `${e.type} by execution ${e.payload.executionId} for message ${e.payload.messageId} of execution ${data.executionId}: an execution writes only into its own messages.`,
      { messageId: e.payload.messageId, executionId: e.payload.executionId, messageExecutionId: data.executionId },
    );
  }
}

function running(e: MessageEvent, data: AssistantData, why: string): void {
  if (data.status !== 'running')
    throw inconsistent(`${e.type} for message ${e.payload.messageId}, which is already ${data.status}: ${why}.`, {
      messageId: e.payload.messageId,
      status: data.status,
    });
}

function indexOfCall(tools: readonly ToolData[], callId: string): number {
  for (let i = 0; i < tools.length; i++) if (tools[i]!.callId === callId) return i;
  return -1;
}

function indexOfPart(parts: readonly { id: string }[], partId: string): number {
  for (let i = 0; i < parts.length; i++) if (parts[i]!.id === partId) return i;
  return -1;
}

function startTool(e: SessionEvent<'tool.started'>, t: ToolData): ToolData {
  if (t.state === 'approved' || (t.state === 'pending' && t.child !== undefined)) return { ...t, state: 'running', runBy: e.payload.executionId };
  if (t.state !== 'pending')
    throw inconsistent(`tool.started for call ${t.callId} in message ${e.payload.messageId}, which is already ${t.state}: a call starts once.`, {
      callId: t.callId,
      state: t.state,
    });
  return { ...t, state: 'running' };
}

function succeedTool(e: SessionEvent<'tool.succeeded'>, t: ToolData): ToolData {
  ended(e, t);
  return { ...t, state: 'completed', output: e.payload.output };
}

function failTool(e: SessionEvent<'tool.failed'>, t: ToolData): ToolData {
  const next = e.payload.error;
  if (t.error !== undefined && t.error.name !== next.name) {
    throw inconsistent(`Tool error name changed for ${t.callId}: ${t.error.name ?? '(unnamed)'} -> ${next.name ?? '(unnamed)'}`, {
      callId: t.callId,
      from: t.error.name,
      to: next.name,
    });
  }
  if (t.state !== 'error') ended(e, t);
  return { ...t, state: 'error', error: next };
}

function ended(e: ToolEvent, t: ToolData): void {
  if (t.state === 'completed' || t.state === 'error' || t.state === 'denied' || t.state === 'cancelled') {
    throw inconsistent(`${e.type} for call ${t.callId} in message ${e.payload.messageId}, which already ended (${t.state}): a call ends once.`, {
      messageId: e.payload.messageId,
      callId: t.callId,
      state: t.state,
    });
  }
}
