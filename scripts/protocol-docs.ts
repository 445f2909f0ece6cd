/**
 * What each generated client type is, in words both clients print (a Go comment, a Python
 * docstring), by type name. Field names are the wire's (`executionId`), as neither client's is.
 * scripts/protocol-types.ts refuses a type without an entry here.
 */
export const typeDocs: Record<string, string> = {
  RecordedError: 'An error as events record it.',
  BlobRef:
    'A blob beside the log, by the SHA-256 of its bytes (64 lower-case hex digits), with their size and media type: a tool result (or a prompt part) too large for its event.',
  Usage:
    "The tokens a model step used. `cachedInputTokens` (part of `inputTokens`) and `reasoningTokens` (part of `outputTokens`) are set when the model server reported them; `costUsd` is what the call cost in US dollars, priced when it ended (the worker's --prices), where its model had a price.",
  RetryTool: 'A durable tool call a continuation retries with the same idempotency key.',
  Continuation:
    'What a continuation input continues (on the input.admitted of a recovery, a hand-back, or the resumption of a turn that waited): `reason` interrupted, handed_back or resumed. `traceparent`: the W3C trace context of the turn continued.',
  WaitChild: "A session call's child (kind session): the session and the input admitted into it, whose turn's end is the parent wait's data.",
  ForkPoint: 'The session and seq a session was forked from (session.forked `from`, a fork reply, `forkedFrom` in status and list).',
  RecordedPart: "How much of a part's text the log holds (`length` in UTF-16 code units).",
  ToolDecision: "A person's decision on a tool call: `outcome` approved, denied or cancelled, and their `reason`.",
  TranscriptText: "A part of an assistant message: text (`type` text) or the model's reasoning (`type` reasoning).",
  TranscriptTool:
    "A tool call of an assistant message, run with `idempotencyKey` when `durable`; `state` how far it got; `output` what it returned, `error` how it failed, `decision` a person's decision on it.",
  TranscriptUser:
    "A prompt of the conversation: `text` its text form, `parts` the prompt's parts when it was a list of them, `delivery` how it was admitted (absent when the item does not say), `continues` what a continuation continues.",
  TranscriptAssistant:
    "An assistant message (a model step): `status` running, completed, failed or recovered; `parts` its text, reasoning and tool calls in order; `finish` the model's finish reason, `error` a failed step's error, `usage` its tokens.",
  TranscriptSummary: "A compaction's summary of the conversation before it.",
  TranscriptItem: 'An item of a transcript (the conversation a fork starts with, as the model runner folds it).',
  TranscriptPart: 'A part of an assistant message in a transcript.',

  ExecutionClaimed: "A worker claimed the session's next turn under a lease.",
  ExecutionRenewed: 'The owner renewed its lease.',
  ExecutionStarted: "The turn started running. `traceparent`: the turn's span (W3C trace context); `parentTraceparent`: its parent, the caller's.",
  ExecutionPhase: '`safe` (rerunning is harmless) or `unknown` (an effect may be in flight).',
  ExecutionCancelled: 'The turn was cancelled; nothing of that execution follows. `actor`: who cancelled.',
  ExecutionSettled:
    'The execution ended: succeeded, failed, released (handed back on shutdown), or waiting (the turn waits for an approval, a signal or a timer, holding nothing, and resumes in a new execution when its waits are resolved).',
  InputAdmitted:
    "A prompt was admitted (`source` user, or recovery for a continuation): a string, or (version 2) a list of parts. `notBefore`, when set, schedules it: no turn takes it before that time (ms since the epoch). `tags`: those the admission gives its session (merged into those it has). `traceparent`: the caller's W3C trace context; the turn that runs the input is its child.",
  InputPromoted: 'A pending input joined an execution.',
  InputDropped: 'Pending inputs dropped unrun by an operator; they never run. `actor`: who dropped them.',
  StepStarted: 'An assistant step (one model request) started.',
  StepEnded: "The step ended with the model's finish reason.",
  StepFailed: 'The step failed.',
  StepRecovered: 'An interrupted step was closed by a recovery.',
  TextDelta: 'Live only: a piece of assistant text as it streams.',
  TextStreamed:
    'Text of one part as it streamed, recorded while it streams: appended to what was recorded of the part, or starting it again (`restart`). A later text.completed replaces it.',
  TextCompleted: 'The final text of one part of an assistant message.',
  ReasoningDelta: "Live only: a piece of the model's reasoning text.",
  ReasoningCompleted: 'The final reasoning text of one part.',
  ModelRetryScheduled: 'Live only: a model request failed and is sent again after `delayMs`.',
  ToolProgressed: 'Live only: how far a running tool call got (`progress` out of `total`, when known), at most one every 100 ms per call.',
  ToolCalled:
    'The model called a tool (`input` absent: the call had none). `started`: the call started in the same append (no tool.started follows); false for a call recorded before it may start, and for every call of a version-1 log.',
  ToolStarted: 'A tool call started running.',
  ToolSucceeded:
    'A tool call returned (`output` absent: it returned nothing, or its result was too large for the event and `outputBlob` names it: its JSON text, stored beside the log).',
  ToolFailed: 'A tool call failed (or was sealed by a cancel or a recovery).',
  WaitStarted:
    "A turn waits (written before its execution settles waiting). `kind` is approval (a person's decision on a tool call), signal (a value from outside), timer or session (another session's turn, `child`); `name` is the wait's key within the turn: an approval's call id, a signal's name, a timer's sleep-N. `until`: when a timer elapses or a signal times out. An approval carries its call (`messageId`, `callId`, `tool`, `input`), whose tool.called (started false) is in the same append.",
  WaitResolved:
    "A wait ended (`executionId`: the execution that waited) with `outcome` approved or denied (an approval), delivered or timed_out (a signal), elapsed (a timer), or cancelled. `reason`: a person's words on the decision, or why it was cancelled; `data`: a delivered signal's value; `actor`: who decided, delivered or cancelled.",
  CompactionStarted: 'The transcript is being compacted.',
  CompactionCompleted: "The compaction's summary.",
  BudgetSet: "The session's budget set: its limits from now on (null: none), `reset` when its spend counts from this event on, `actor` who.",
  SessionTagged: "The session's tags changed: each key set to its value, or removed where null.",
  SessionForked:
    "The first event of a session forked from another: `from`, the source and the seq it was forked at; `transcript`, the source's conversation up to there; `tags`, those the fork was given; `owner`, the source's owner.",
  TurnInterrupted:
    "Live only: the turn's owner is gone and the turn is being recovered. Of message `messageId` keep the first `length` UTF-16 code units of each part in `recorded`; discard the rest and any part not listed.",
  RecoveryStarted: 'Another worker took over an execution whose owner lost its lease.',
  RecoveryCompleted: 'The recovery closed the execution and (usually) admitted a continuation.',
  RecoveryWakeRequested: 'The recovery asked for the continuation to be run.',
  RecoveryWakeDelivered: 'The continuation runs in execution `byExecutionId`.',
  RecoveryWakeFailed: 'A wake attempt failed (`parked`: no more attempts until asked).',
};
