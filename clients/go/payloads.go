package sessiond

// The payload types' runtime: payloads_gen.go (generated from the protocol schema by
// scripts/protocol.ts) holds one struct per event type and the Catalog; upcasters bring older
// stored payloads up to their current versions.
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
	"github.com/sessiond/sessiond/clients/go/internal/wire"
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
func (a Any) MarshalJSON() ([]byte, error) { return wire.AppendJSON(nil, a.Value) }

// UnmarshalJSON reads any JSON value (objects as Map).
func (a *Any) UnmarshalJSON(data []byte) error {
	v, err := wire.ParseJSON(data)
	if err != nil {
		return err
	}
	*a = Any{Set: true, Value: v}
	return nil
}

var _ json.Marshaler = Any{}

// UnknownPayload is the payload of an event whose type, or version, this client does not know
// (kept only by readers asked to keep them, see KeepUnknown): its fields as they came.
type UnknownPayload struct {
	Type    string
	Version int64
	Fields  Map
}

// MarshalJSON writes the fields as they came.
func (p *UnknownPayload) MarshalJSON() ([]byte, error) { return wire.AppendJSON(nil, p.Fields) }

// EventType is the type as it came.
func (p *UnknownPayload) EventType() string { return p.Type }

// CatalogEntry describes one event type: its schema version and whether it is durable (stored in
// the log) or live only.
type CatalogEntry struct {
	Type    string
	Version int64
	Durable bool
	new     func() Payload
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
