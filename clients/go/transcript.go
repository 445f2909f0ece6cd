package sessiond

import (
	"reflect"

	"github.com/sessiond/sessiond/clients/go/internal/wire"
)

// Transcripts (src/events/transcript.ts, the catalog's TranscriptItemSchema): the conversation a
// fork starts with, as the model runner folds it, in SessionForked.Transcript.

// TranscriptItem is one item of a conversation (SessionForked.Transcript): a *TranscriptUser (a
// prompt that joined a turn), a *TranscriptAssistant (a model step: its text, reasoning and tool
// calls) or a *TranscriptSummary (a compaction's summary, which replaces what came before it).
// Each is written with its "type" first (ItemType), then its fields in the catalog's order.
type TranscriptItem interface {
	// ItemType is the item's type on the wire: user, assistant or summary.
	ItemType() string
	transcriptItem()
}

// TranscriptUser is a prompt of the conversation: Text its text form (PromptText), Parts the
// prompt's parts when it was a list of them (nil for a string prompt), Delivery how it was
// admitted (steer or queue; nil when the item does not say), Continues what a continuation
// continues.
type TranscriptUser struct {
	InputID     string        `sd:"inputId,id"`
	ExecutionID string        `sd:"executionId,id"`
	Text        string        `sd:"text"`
	Parts       []PromptPart  `sd:"parts,opt"`
	Delivery    *string       `sd:"delivery,opt,enum=steer|queue"`
	Continues   *Continuation `sd:"continues,opt"`
}

// TranscriptAssistant is one assistant message (a model step): Status running, completed,
// failed or recovered; Parts its text, reasoning and tool calls in order; Finish the model's
// finish reason, Error a failed step's error, Usage its tokens.
type TranscriptAssistant struct {
	MessageID   string           `sd:"messageId,id"`
	ExecutionID string           `sd:"executionId,id"`
	Status      string           `sd:"status,enum=running|completed|failed|recovered"`
	Parts       []TranscriptPart `sd:"parts"`
	Finish      *string          `sd:"finish,opt"`
	Error       *RecordedError   `sd:"error,opt"`
	Usage       *Usage           `sd:"usage,opt"`
}

// TranscriptSummary is a compaction's summary of the conversation before it.
type TranscriptSummary struct {
	MessageID   string `sd:"messageId,id"`
	ExecutionID string `sd:"executionId,id"`
	Summary     string `sd:"summary"`
}

// TranscriptPart is one part of an assistant message: a *TranscriptText (text or reasoning) or a
// *TranscriptTool (a tool call and how it ended).
type TranscriptPart interface {
	// PartType is the part's type on the wire: text, reasoning or tool.
	PartType() string
	transcriptPart()
}

// TranscriptText is a part of text (Type "text") or of the model's reasoning (Type "reasoning").
type TranscriptText struct {
	Type   string
	PartID string `sd:"partId,id"`
	Text   string `sd:"text"`
}

// TranscriptTool is a tool call: Input its input (Set always: a call without one reads as
// invalid, as sessiond's reader has it), run with IdempotencyKey when Durable; State called,
// awaiting_approval, approved, denied, cancelled, running, succeeded or failed; Output what it
// returned, Error how it failed, Decision a person's decision on it.
type TranscriptTool struct {
	CallID         string         `sd:"callId,id"`
	Name           string         `sd:"name,nonempty"`
	Input          Any            `sd:"input"`
	Durable        bool           `sd:"durable"`
	IdempotencyKey *string        `sd:"idempotencyKey,opt"`
	State          string         `sd:"state,enum=called|awaiting_approval|approved|denied|cancelled|running|succeeded|failed"`
	Output         Any            `sd:"output,opt"`
	OutputBlob     *BlobRef       `sd:"outputBlob,opt"` // a result too large for its event, stored beside the log as JSON text (Output absent)
	Error          *RecordedError `sd:"error,opt"`
	Decision       *ToolDecision  `sd:"decision,opt"`
}

// ToolDecision is a person's decision on a tool call: Outcome approved, denied or cancelled, and
// their Reason.
type ToolDecision struct {
	Outcome string  `sd:"outcome,enum=approved|denied|cancelled"`
	Reason  *string `sd:"reason,opt"`
}

func (*TranscriptUser) ItemType() string      { return "user" }
func (*TranscriptAssistant) ItemType() string { return "assistant" }
func (*TranscriptSummary) ItemType() string   { return "summary" }
func (*TranscriptUser) transcriptItem()       {}
func (*TranscriptAssistant) transcriptItem()  {}
func (*TranscriptSummary) transcriptItem()    {}
func (p *TranscriptText) PartType() string    { return p.Type }
func (*TranscriptTool) PartType() string      { return "tool" }
func (*TranscriptText) transcriptPart()       {}
func (*TranscriptTool) transcriptPart()       {}

// MarshalJSON writes the item as sessiond does (its type first).
func (u TranscriptUser) MarshalJSON() ([]byte, error) { return wire.AppendJSON(nil, variantWire(&u)) }

// MarshalJSON writes the item as sessiond does (its type first).
func (a TranscriptAssistant) MarshalJSON() ([]byte, error) {
	return wire.AppendJSON(nil, variantWire(&a))
}

// MarshalJSON writes the item as sessiond does (its type first).
func (s TranscriptSummary) MarshalJSON() ([]byte, error) {
	return wire.AppendJSON(nil, variantWire(&s))
}

// MarshalJSON writes the part as sessiond does (its type first).
func (p TranscriptText) MarshalJSON() ([]byte, error) { return wire.AppendJSON(nil, variantWire(&p)) }

// MarshalJSON writes the part as sessiond does (its type first).
func (p TranscriptTool) MarshalJSON() ([]byte, error) { return wire.AppendJSON(nil, variantWire(&p)) }

var (
	transcriptItemType = reflect.TypeFor[TranscriptItem]()
	transcriptPartType = reflect.TypeFor[TranscriptPart]()
	promptPartType     = reflect.TypeFor[PromptPart]()
)

// variantWire is an item or a part as sessiond writes it: "type", then its fields in order.
func variantWire(v any) Map {
	var typ string
	switch x := v.(type) {
	case TranscriptItem:
		typ = x.ItemType()
	case TranscriptPart:
		typ = x.PartType()
	}
	rv := reflect.ValueOf(v)
	if rv.IsNil() {
		return nil
	}
	return append(Map{{Key: "type", Value: typ}}, encodeStruct(rv.Elem())...)
}

// transcriptVariants are the shapes of the catalog's unions (in its order): the types each takes
// and a new value of it. The "type" key picks the shape; unknown keys are dropped, as zod's
// (non-strict) objects drop them.
var (
	itemVariants = []struct {
		types []string
		new   func() TranscriptItem
	}{
		{[]string{"user"}, func() TranscriptItem { return new(TranscriptUser) }},
		{[]string{"assistant"}, func() TranscriptItem { return new(TranscriptAssistant) }},
		{[]string{"summary"}, func() TranscriptItem { return new(TranscriptSummary) }},
	}
	partVariants = []struct {
		types []string
		new   func(typ string) TranscriptPart
	}{
		{[]string{"text", "reasoning"}, func(typ string) TranscriptPart { return &TranscriptText{Type: typ} }},
		{[]string{"tool"}, func(string) TranscriptPart { return new(TranscriptTool) }},
	}
)

// decodeTranscriptItem reads one transcript item (nil, with the issues added, when it is none).
func decodeTranscriptItem(raw any, path string, is *issues) TranscriptItem {
	m, ok := raw.(Map)
	if !ok {
		is.add(path, "expected a transcript item (an object), got %s", describe(raw))
		return nil
	}
	typ, _ := m.Get("type")
	for _, v := range itemVariants {
		if typ == v.types[0] {
			item := v.new()
			decodeStruct(reflect.ValueOf(item).Elem(), m, path, is)
			return item
		}
	}
	is.add(path+".type", "expected user, assistant or summary, got %s", preview(typ))
	return nil
}

// decodeTranscriptPart reads one part of an assistant item (nil, with the issues added, when it is none).
func decodeTranscriptPart(raw any, path string, is *issues) TranscriptPart {
	m, ok := raw.(Map)
	if !ok {
		is.add(path, "expected a part (an object), got %s", describe(raw))
		return nil
	}
	typ, _ := m.Get("type")
	for _, v := range partVariants {
		for _, t := range v.types {
			if typ == t {
				part := v.new(t)
				decodeStruct(reflect.ValueOf(part).Elem(), m, path, is)
				return part
			}
		}
	}
	is.add(path+".type", "expected text, reasoning or tool, got %s", preview(typ))
	return nil
}

// decodePromptPart reads a part of a prompt (a transcript's user item keeps its parts).
func decodePromptPart(raw any, path string, is *issues) PromptPart {
	part, problem := decodePart(raw)
	if problem != "" {
		is.add(path, "%s", problem)
	}
	return part
}
