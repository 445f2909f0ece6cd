package sessiond

// Typed payloads of every event type in sessiond's catalog (src/events/catalog.ts), at their current
// versions; upcasters bring older stored payloads up to them.
// Field tags `sd:"name,rules"` drive decoding, validation and the canonical encoding (fields are
// written in declaration order, the catalog's order):
//
//	id        a string of 1-128 characters (payload ids are checked for length only)
//	nonempty  a string or array with at least one element
//	max=N     a string of at most N characters
//	enum=a|b  one of these strings
//	min=N     an integer of at least N
//	each=id   every element of a []string is an id
//	opt       may be absent (a nil pointer, an unset Any, a nil slice or map, is left out)
//	null      may be null (a nil pointer is written as nil)
//	default=V absent reads as V (a string)
//	tags      a map of tags (Tags, or TagChanges whose nil values are null): keys are tag keys,
//	          values strings of 1-MaxTagValue characters; written with the keys sorted
//
// Characters are Unicode code points, as zod 4 counts a string's min and max (an emoji is one).
// A Prompt field reads a string or a list of parts and checks each part (prompt.go), as does a
// PromptPart element; a TranscriptItem or TranscriptPart element reads the shape its "type"
// names (transcript.go); an Any field takes any value. Unknown payload fields are dropped, as the
// Node reader drops them (a prompt part's are not: it is a strict object).

import (
	"encoding/json"
)

// Payload is an event's typed payload: one of the structs below, or *UnknownPayload for a type
// (or version) this client does not know, when the reader was asked to keep those.
type Payload interface {
	// EventType is the event type the payload belongs to (e.g. "step.started").
	EventType() string
}

// Any is an optional value of any shape (a tool's input or output): Set is false when absent.
// Maps inside it are Map values, arrays []any, integers int64.
type Any struct {
	Set   bool
	Value any
}

// IsZero reports an absent value (for encoding/json's omitzero).
func (a Any) IsZero() bool { return !a.Set }

// MarshalJSON writes the value (null when absent).
func (a Any) MarshalJSON() ([]byte, error) { return AppendJSON(nil, a.Value) }

// UnmarshalJSON reads any JSON value (objects as Map).
func (a *Any) UnmarshalJSON(data []byte) error {
	v, err := ParseJSON(data)
	if err != nil {
		return err
	}
	*a = Any{Set: true, Value: v}
	return nil
}

var _ json.Marshaler = Any{}

// RecordedError is an error as events record it.
type RecordedError struct {
	Type    string  `sd:"type,nonempty" json:"type"`
	Message string  `sd:"message" json:"message"`
	Name    *string `sd:"name,opt" json:"name,omitempty"`
}

// Usage is the tokens a model step used. CachedInputTokens (part of InputTokens) and
// ReasoningTokens (part of OutputTokens) are set when the model server reported them.
type Usage struct {
	InputTokens       int64  `sd:"inputTokens,min=0" json:"inputTokens"`
	OutputTokens      int64  `sd:"outputTokens,min=0" json:"outputTokens"`
	CachedInputTokens *int64 `sd:"cachedInputTokens,opt,min=0" json:"cachedInputTokens,omitempty"`
	ReasoningTokens   *int64 `sd:"reasoningTokens,opt,min=0" json:"reasoningTokens,omitempty"`
	// CostUSD is what the call cost in US dollars, priced when it ended (the worker's --prices),
	// set only where its model had a price.
	CostUSD *float64 `sd:"costUsd,opt,min=0" json:"costUsd,omitempty"`
}

// RetryTool is a durable tool call a continuation retries with the same idempotency key.
type RetryTool struct {
	CallID         string `sd:"callId,id" json:"callId"`
	MessageID      string `sd:"messageId,id" json:"messageId"`
	Name           string `sd:"name,nonempty" json:"name"`
	IdempotencyKey string `sd:"idempotencyKey" json:"idempotencyKey"`
}

// Continuation is what a continuation input continues (on the input.admitted of a recovery, a
// hand-back, or the resumption of a turn that waited): Reason interrupted, handed_back or resumed.
type Continuation struct {
	ExecutionID        string      `sd:"executionId,id" json:"executionId"`
	Reason             string      `sd:"reason,enum=interrupted|handed_back|resumed" json:"reason"`
	Phase              string      `sd:"phase,enum=safe|unknown" json:"phase"`
	InputIDs           []string    `sd:"inputIds,each=id" json:"inputIds"`
	AssistantMessageID *string     `sd:"assistantMessageId,id,null" json:"assistantMessageId"`
	RetryTools         []RetryTool `sd:"retryTools" json:"retryTools"`
	// Traceparent: the W3C trace context of the turn continued (the continuation's turn links to it).
	Traceparent *string `sd:"traceparent,opt" json:"traceparent,omitempty"`
}

// ExecutionClaimed: a worker claimed the session's next turn under a lease.
type ExecutionClaimed struct {
	ExecutionID  string `sd:"executionId,id" json:"executionId"`
	OwnerID      string `sd:"ownerId,id" json:"ownerId"`
	ExpiresAt    int64  `sd:"expiresAt,min=0" json:"expiresAt"`
	LeaseMs      int64  `sd:"leaseMs,min=1" json:"leaseMs"`
	AssistantSeq int64  `sd:"assistantSeq,min=-1" json:"assistantSeq"`
}

// ExecutionRenewed: the owner renewed its lease.
type ExecutionRenewed struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	ExpiresAt   int64  `sd:"expiresAt,min=0" json:"expiresAt"`
}

// ExecutionStarted: the turn started running.
type ExecutionStarted struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	// Traceparent: the turn's span (W3C trace context); ParentTraceparent: its parent, the caller's.
	Traceparent       *string `sd:"traceparent,opt" json:"traceparent,omitempty"`
	ParentTraceparent *string `sd:"parentTraceparent,opt" json:"parentTraceparent,omitempty"`
}

// ExecutionPhase: `safe` (rerunning is harmless) or `unknown` (an effect may be in flight).
type ExecutionPhase struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	Phase       string `sd:"phase,enum=safe|unknown" json:"phase"`
}

// ExecutionCancelled: the turn was cancelled; nothing of that execution follows.
type ExecutionCancelled struct {
	ExecutionID string  `sd:"executionId,id" json:"executionId"`
	Reason      *string `sd:"reason,opt,max=1000" json:"reason,omitempty"`
	Actor       *string `sd:"actor,opt,nonempty,max=200" json:"actor,omitempty"` // who cancelled
}

// ExecutionSettled: the execution ended: succeeded, failed, released (handed back on shutdown), or
// waiting (the turn waits for an approval, a signal or a timer, holding nothing, and resumes in a
// new execution when its waits are resolved).
type ExecutionSettled struct {
	ExecutionID string         `sd:"executionId,id" json:"executionId"`
	Outcome     string         `sd:"outcome,enum=succeeded|failed|released|waiting" json:"outcome"`
	Error       *RecordedError `sd:"error,opt" json:"error,omitempty"`
}

// InputAdmitted: a prompt was admitted (source `user`, or `recovery` for a continuation): a
// string, or (version 2) a list of parts (Prompt; PromptText is its text form).
// NotBefore, when set, schedules it: no turn takes it before that time (ms since the epoch). Tags:
// those the admission gives its session (merged into those it has; nil when none).
type InputAdmitted struct {
	InputID   string        `sd:"inputId,id" json:"inputId"`
	Prompt    Prompt        `sd:"prompt" json:"prompt"`
	Delivery  string        `sd:"delivery,enum=steer|queue" json:"delivery"`
	Wake      bool          `sd:"wake" json:"wake"`
	Source    string        `sd:"source,enum=user|recovery,default=user" json:"source"`
	Continues *Continuation `sd:"continues,opt" json:"continues,omitempty"`
	NotBefore *int64        `sd:"notBefore,opt,min=0" json:"notBefore,omitempty"`
	Tags      Tags          `sd:"tags,opt,tags" json:"tags,omitempty"`
	Owner     *string       `sd:"owner,opt,id" json:"owner,omitempty"`
	// Traceparent: the caller's W3C trace context; the turn that runs the input is its child.
	Traceparent *string `sd:"traceparent,opt" json:"traceparent,omitempty"`
}

// InputPromoted: a pending input joined an execution.
type InputPromoted struct {
	InputID     string `sd:"inputId,id" json:"inputId"`
	ExecutionID string `sd:"executionId,id" json:"executionId"`
}

// InputDropped: pending inputs dropped unrun by an operator; they never run.
type InputDropped struct {
	InputIDs []string `sd:"inputIds,nonempty,each=id" json:"inputIds"`
	Reason   *string  `sd:"reason,opt,max=1000" json:"reason,omitempty"`
	Actor    *string  `sd:"actor,opt,nonempty,max=200" json:"actor,omitempty"` // who dropped them
}

// StepStarted: an assistant step (one model request) started.
type StepStarted struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	Step        int64  `sd:"step,min=0" json:"step"`
}

// StepEnded: the step ended with the model's finish reason.
type StepEnded struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	Finish      string `sd:"finish,nonempty" json:"finish"`
	Usage       *Usage `sd:"usage,opt" json:"usage,omitempty"`
}

// StepFailed: the step failed.
type StepFailed struct {
	ExecutionID string        `sd:"executionId,id" json:"executionId"`
	MessageID   string        `sd:"messageId,id" json:"messageId"`
	Error       RecordedError `sd:"error" json:"error"`
}

// StepRecovered: an interrupted step was closed by a recovery.
type StepRecovered struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	Reason      string `sd:"reason" json:"reason"`
}

// TextDelta (live only): a piece of assistant text as it streams.
type TextDelta struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	PartID      string `sd:"partId,id" json:"partId"`
	Delta       string `sd:"delta" json:"delta"`
}

// TextStreamed: text of one part as it streamed, recorded while it streams: appended to what
// was recorded of the part, or starting it again (Restart). A later TextCompleted replaces it.
type TextStreamed struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	PartID      string `sd:"partId,id" json:"partId"`
	Text        string `sd:"text" json:"text"`
	Restart     bool   `sd:"restart" json:"restart"`
}

// TextCompleted: the final text of one part of an assistant message.
type TextCompleted struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	PartID      string `sd:"partId,id" json:"partId"`
	Text        string `sd:"text" json:"text"`
}

// ReasoningDelta (live only): a piece of the model's reasoning text.
type ReasoningDelta struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	PartID      string `sd:"partId,id" json:"partId"`
	Delta       string `sd:"delta" json:"delta"`
}

// ReasoningCompleted: the final reasoning text of one part.
type ReasoningCompleted struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	PartID      string `sd:"partId,id" json:"partId"`
	Text        string `sd:"text" json:"text"`
}

// ModelRetryScheduled (live only): a model request failed and is sent again after DelayMs.
type ModelRetryScheduled struct {
	ExecutionID string        `sd:"executionId,id" json:"executionId"`
	MessageID   string        `sd:"messageId,id" json:"messageId"`
	Attempt     int64         `sd:"attempt,min=1" json:"attempt"`
	DelayMs     int64         `sd:"delayMs,min=0" json:"delayMs"`
	Error       RecordedError `sd:"error" json:"error"`
}

// ToolProgressed (live only): how far a running tool call got (Progress out of Total, when
// known), at most one every 100 ms per call.
type ToolProgressed struct {
	ExecutionID string   `sd:"executionId,id" json:"executionId"`
	MessageID   string   `sd:"messageId,id" json:"messageId"`
	CallID      string   `sd:"callId,id" json:"callId"`
	Progress    float64  `sd:"progress,min=0" json:"progress"`
	Total       *float64 `sd:"total,opt,min=0" json:"total,omitempty"`
	Message     *string  `sd:"message,opt,max=1000" json:"message,omitempty"`
}

// ToolCalled: the model called a tool (Input unset: the call had none).
type ToolCalled struct {
	ExecutionID    string  `sd:"executionId,id" json:"executionId"`
	MessageID      string  `sd:"messageId,id" json:"messageId"`
	CallID         string  `sd:"callId,id" json:"callId"`
	Name           string  `sd:"name,nonempty" json:"name"`
	Input          Any     `sd:"input,opt" json:"input,omitzero"`
	Durable        bool    `sd:"durable" json:"durable"`
	IdempotencyKey *string `sd:"idempotencyKey,opt" json:"idempotencyKey,omitempty"`
	// Started: the call started in the same append (no ToolStarted follows); false for a call
	// recorded before it may start, and for every call of a version-1 log.
	Started bool `sd:"started" json:"started"`
}

// ToolStarted: a tool call started running.
type ToolStarted struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	CallID      string `sd:"callId,id" json:"callId"`
}

// ToolSucceeded: a tool call returned (Output unset: it returned nothing).
type ToolSucceeded struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	CallID      string `sd:"callId,id" json:"callId"`
	Output      Any    `sd:"output,opt" json:"output,omitzero"`
}

// ToolFailed: a tool call failed (or was sealed by a cancel or a recovery).
type ToolFailed struct {
	ExecutionID string        `sd:"executionId,id" json:"executionId"`
	MessageID   string        `sd:"messageId,id" json:"messageId"`
	CallID      string        `sd:"callId,id" json:"callId"`
	Error       RecordedError `sd:"error" json:"error"`
}

// WaitStarted: a turn waits (written before its execution settles `waiting`). Kind is approval (a
// person's decision on a tool call), signal (a value from outside), timer or session (another
// session's turn, Child); Name is the wait's key
// within the turn: an approval's call id, a signal's name, a timer's `sleep-N`. Until: when a timer
// elapses or a signal times out. An approval carries its call (MessageID, CallID, Tool, Input),
// whose ToolCalled (Started false) is in the same append.
type WaitStarted struct {
	ExecutionID string     `sd:"executionId,id" json:"executionId"`
	Kind        string     `sd:"kind,enum=approval|signal|timer|session" json:"kind"`
	Name        string     `sd:"name,nonempty,max=200" json:"name"`
	MessageID   *string    `sd:"messageId,opt,id" json:"messageId,omitempty"`
	CallID      *string    `sd:"callId,opt,id" json:"callId,omitempty"`
	Tool        *string    `sd:"tool,opt,nonempty" json:"tool,omitempty"`
	Input       Any        `sd:"input,opt" json:"input,omitzero"`
	Until       *int64     `sd:"until,opt,min=0" json:"until,omitempty"`
	Child       *WaitChild `sd:"child,opt" json:"child,omitempty"`
}

// WaitChild: a session call's child (kind session): the session and the input admitted into it,
// whose turn's end the parent's wait is given as its Data.
type WaitChild struct {
	SessionID string `sd:"sessionId,id" json:"sessionId"`
	InputID   string `sd:"inputId,id" json:"inputId"`
}

// WaitResolved: a wait ended (ExecutionID: the execution that waited) with Outcome approved or
// denied (an approval), delivered or timed_out (a signal), elapsed (a timer), or cancelled. Reason:
// a person's words on the decision, or why it was cancelled; Data: a delivered signal's value;
// Actor: who decided, delivered or cancelled.
type WaitResolved struct {
	ExecutionID string  `sd:"executionId,id" json:"executionId"`
	Kind        string  `sd:"kind,enum=approval|signal|timer|session" json:"kind"`
	Name        string  `sd:"name,nonempty,max=200" json:"name"`
	Outcome     string  `sd:"outcome,enum=approved|denied|delivered|timed_out|elapsed|cancelled" json:"outcome"`
	MessageID   *string `sd:"messageId,opt,id" json:"messageId,omitempty"`
	CallID      *string `sd:"callId,opt,id" json:"callId,omitempty"`
	Reason      *string `sd:"reason,opt,max=1000" json:"reason,omitempty"`
	Data        Any     `sd:"data,opt" json:"data,omitzero"`
	Actor       *string `sd:"actor,opt,nonempty,max=200" json:"actor,omitempty"`
}

// CompactionStarted: the transcript is being compacted.
type CompactionStarted struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	Reason      string `sd:"reason" json:"reason"`
}

// CompactionCompleted: the compaction's summary.
type CompactionCompleted struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	MessageID   string `sd:"messageId,id" json:"messageId"`
	Summary     string `sd:"summary" json:"summary"`
	Usage       *Usage `sd:"usage,opt" json:"usage,omitempty"`
}

// SessionTagged: the session's tags changed (Tag): each key set to its value, or removed where nil.
type SessionTagged struct {
	Tags TagChanges `sd:"tags,tags" json:"tags"`
}

// BudgetSet: the session's budget set (the admin's Budget): its limits from now on (nil: none),
// Reset when its spend counts from this event on, Actor who.
type BudgetSet struct {
	Tokens  *int64   `sd:"tokens,min=0,null" json:"tokens"`
	CostUSD *float64 `sd:"costUsd,min=0,null" json:"costUsd"`
	Reset   bool     `sd:"reset" json:"reset"`
	Actor   *string  `sd:"actor,opt,nonempty,max=200" json:"actor,omitempty"`
}

// SessionForked: the first event of a session forked from another (Fork): From, the source and
// the seq it was forked at; Transcript, the source's conversation up to there (what the fork's
// runner history and message rows start from); Tags, those the fork was given (nil when none).
type SessionForked struct {
	From       ForkPoint        `sd:"from" json:"from"`
	Transcript []TranscriptItem `sd:"transcript" json:"transcript"`
	Tags       Tags             `sd:"tags,opt,tags" json:"tags,omitzero"`
	Owner      *string          `sd:"owner,opt,id" json:"owner,omitempty"`
}

// RecoveryStarted: another worker took over an execution whose owner lost its lease.
type RecoveryStarted struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
}

// RecordedPart: how much of a part's text the log holds (Length in UTF-16 code units).
type RecordedPart struct {
	PartID string `sd:"partId,id" json:"partId"`
	Length int64  `sd:"length,min=0" json:"length"`
}

// TurnInterrupted (live only): the turn's owner is gone and the turn is being recovered. Of
// message MessageID keep the first Length UTF-16 code units of each part in Recorded; discard the
// rest and any part not listed.
type TurnInterrupted struct {
	ExecutionID         string         `sd:"executionId,id" json:"executionId"`
	OwnerID             string         `sd:"ownerId,id" json:"ownerId"`
	Reason              string         `sd:"reason,enum=lease_expired|handed_back" json:"reason"`
	MessageID           *string        `sd:"messageId,id,null" json:"messageId"`
	Recorded            []RecordedPart `sd:"recorded" json:"recorded"`
	ContinuationInputID *string        `sd:"continuationInputId,id,null" json:"continuationInputId"`
}

// RecoveryCompleted: the recovery closed the execution and (usually) admitted a continuation.
type RecoveryCompleted struct {
	ExecutionID         string         `sd:"executionId,id" json:"executionId"`
	AssistantMessageID  *string        `sd:"assistantMessageId,id,null" json:"assistantMessageId"`
	ContinuationInputID *string        `sd:"continuationInputId,id,null" json:"continuationInputId"`
	Phase               string         `sd:"phase,enum=safe|unknown" json:"phase"`
	Error               *RecordedError `sd:"error,opt" json:"error,omitempty"`
}

// RecoveryWakeRequested: the recovery asked for the continuation to be run.
type RecoveryWakeRequested struct {
	ExecutionID string `sd:"executionId,id" json:"executionId"`
	Attempt     int64  `sd:"attempt,min=1" json:"attempt"`
}

// RecoveryWakeDelivered: the continuation runs in execution ByExecutionID.
type RecoveryWakeDelivered struct {
	ExecutionID   string `sd:"executionId,id" json:"executionId"`
	ByExecutionID string `sd:"byExecutionId,id" json:"byExecutionId"`
}

// RecoveryWakeFailed: a wake attempt failed (Parked: no more attempts until asked).
type RecoveryWakeFailed struct {
	ExecutionID string        `sd:"executionId,id" json:"executionId"`
	Attempt     int64         `sd:"attempt,min=1" json:"attempt"`
	Error       RecordedError `sd:"error" json:"error"`
	Parked      bool          `sd:"parked" json:"parked"`
}

// UnknownPayload is the payload of an event whose type, or version, this client does not know
// (kept only by readers asked to keep them, see KeepUnknown): its fields as they came.
type UnknownPayload struct {
	Type    string
	Version int64
	Fields  Map
}

// MarshalJSON writes the fields as they came.
func (p *UnknownPayload) MarshalJSON() ([]byte, error) { return AppendJSON(nil, p.Fields) }

func (p *UnknownPayload) EventType() string      { return p.Type }
func (*ExecutionClaimed) EventType() string      { return "execution.claimed" }
func (*ExecutionRenewed) EventType() string      { return "execution.renewed" }
func (*ExecutionStarted) EventType() string      { return "execution.started" }
func (*ExecutionPhase) EventType() string        { return "execution.phase" }
func (*ExecutionCancelled) EventType() string    { return "execution.cancelled" }
func (*ExecutionSettled) EventType() string      { return "execution.settled" }
func (*InputAdmitted) EventType() string         { return "input.admitted" }
func (*InputPromoted) EventType() string         { return "input.promoted" }
func (*InputDropped) EventType() string          { return "input.dropped" }
func (*StepStarted) EventType() string           { return "step.started" }
func (*StepEnded) EventType() string             { return "step.ended" }
func (*StepFailed) EventType() string            { return "step.failed" }
func (*StepRecovered) EventType() string         { return "step.recovered" }
func (*TextDelta) EventType() string             { return "text.delta" }
func (*TextStreamed) EventType() string          { return "text.streamed" }
func (*TextCompleted) EventType() string         { return "text.completed" }
func (*ReasoningDelta) EventType() string        { return "reasoning.delta" }
func (*ReasoningCompleted) EventType() string    { return "reasoning.completed" }
func (*ModelRetryScheduled) EventType() string   { return "model.retry_scheduled" }
func (*ToolProgressed) EventType() string        { return "tool.progressed" }
func (*ToolCalled) EventType() string            { return "tool.called" }
func (*ToolStarted) EventType() string           { return "tool.started" }
func (*ToolSucceeded) EventType() string         { return "tool.succeeded" }
func (*ToolFailed) EventType() string            { return "tool.failed" }
func (*WaitStarted) EventType() string           { return "wait.started" }
func (*WaitResolved) EventType() string          { return "wait.resolved" }
func (*CompactionStarted) EventType() string     { return "compaction.started" }
func (*CompactionCompleted) EventType() string   { return "compaction.completed" }
func (*SessionTagged) EventType() string         { return "session.tagged" }
func (*BudgetSet) EventType() string             { return "budget.set" }
func (*SessionForked) EventType() string         { return "session.forked" }
func (*TurnInterrupted) EventType() string       { return "turn.interrupted" }
func (*RecoveryStarted) EventType() string       { return "recovery.started" }
func (*RecoveryCompleted) EventType() string     { return "recovery.completed" }
func (*RecoveryWakeRequested) EventType() string { return "recovery.wake_requested" }
func (*RecoveryWakeDelivered) EventType() string { return "recovery.wake_delivered" }
func (*RecoveryWakeFailed) EventType() string    { return "recovery.wake_failed" }

// CatalogEntry describes one event type: its schema version and whether it is durable (stored in
// the log) or live only.
type CatalogEntry struct {
	Type    string
	Version int64
	Durable bool
	new     func() Payload
}

// Catalog is every event type this client knows, in the order of sessiond's catalog.
var Catalog = []CatalogEntry{
	{"execution.claimed", 1, true, func() Payload { return new(ExecutionClaimed) }},
	{"execution.renewed", 1, true, func() Payload { return new(ExecutionRenewed) }},
	{"execution.started", 1, true, func() Payload { return new(ExecutionStarted) }},
	{"execution.phase", 1, true, func() Payload { return new(ExecutionPhase) }},
	{"execution.cancelled", 1, true, func() Payload { return new(ExecutionCancelled) }},
	{"execution.settled", 1, true, func() Payload { return new(ExecutionSettled) }},
	{"input.admitted", 2, true, func() Payload { return new(InputAdmitted) }},
	{"input.promoted", 1, true, func() Payload { return new(InputPromoted) }},
	{"input.dropped", 1, true, func() Payload { return new(InputDropped) }},
	{"step.started", 1, true, func() Payload { return new(StepStarted) }},
	{"step.ended", 1, true, func() Payload { return new(StepEnded) }},
	{"step.failed", 1, true, func() Payload { return new(StepFailed) }},
	{"step.recovered", 1, true, func() Payload { return new(StepRecovered) }},
	{"text.delta", 1, false, func() Payload { return new(TextDelta) }},
	{"text.streamed", 1, true, func() Payload { return new(TextStreamed) }},
	{"text.completed", 1, true, func() Payload { return new(TextCompleted) }},
	{"reasoning.delta", 1, false, func() Payload { return new(ReasoningDelta) }},
	{"reasoning.completed", 1, true, func() Payload { return new(ReasoningCompleted) }},
	{"model.retry_scheduled", 1, false, func() Payload { return new(ModelRetryScheduled) }},
	{"tool.progressed", 1, false, func() Payload { return new(ToolProgressed) }},
	{"tool.called", 2, true, func() Payload { return new(ToolCalled) }},
	{"tool.started", 1, true, func() Payload { return new(ToolStarted) }},
	{"tool.succeeded", 1, true, func() Payload { return new(ToolSucceeded) }},
	{"tool.failed", 1, true, func() Payload { return new(ToolFailed) }},
	{"wait.started", 1, true, func() Payload { return new(WaitStarted) }},
	{"wait.resolved", 1, true, func() Payload { return new(WaitResolved) }},
	{"compaction.started", 1, true, func() Payload { return new(CompactionStarted) }},
	{"compaction.completed", 1, true, func() Payload { return new(CompactionCompleted) }},
	{"budget.set", 1, true, func() Payload { return new(BudgetSet) }},
	{"session.tagged", 1, true, func() Payload { return new(SessionTagged) }},
	{"session.forked", 1, true, func() Payload { return new(SessionForked) }},
	{"turn.interrupted", 1, false, func() Payload { return new(TurnInterrupted) }},
	{"recovery.started", 1, true, func() Payload { return new(RecoveryStarted) }},
	{"recovery.completed", 1, true, func() Payload { return new(RecoveryCompleted) }},
	{"recovery.wake_requested", 1, true, func() Payload { return new(RecoveryWakeRequested) }},
	{"recovery.wake_delivered", 1, true, func() Payload { return new(RecoveryWakeDelivered) }},
	{"recovery.wake_failed", 1, true, func() Payload { return new(RecoveryWakeFailed) }},
}

// upcasters[type][v] turns a stored version-v payload of type into a version-v+1 one, as sessiond's
// catalog does (x-sessiond-upcasters in clients/protocol/schema/events.schema.json).
var upcasters = map[string]map[int64]func(Map) Map{
	"input.admitted": {1: func(p Map) Map { return p }}, // none: a version-1 prompt is a string, which version 2 reads
	"tool.called": {1: func(p Map) Map { // adds started: false (a version-1 call is followed by its tool.started)
		up := append(Map(nil), p...)
		up.Set("started", false)
		return up
	}},
}

var catalogByType = func() map[string]*CatalogEntry {
	m := make(map[string]*CatalogEntry, len(Catalog))
	for i := range Catalog {
		m[Catalog[i].Type] = &Catalog[i]
	}
	return m
}()

// LookupType returns the catalog entry of an event type, if this client knows it.
func LookupType(eventType string) (CatalogEntry, bool) {
	e, ok := catalogByType[eventType]
	if !ok {
		return CatalogEntry{}, false
	}
	return *e, true
}
