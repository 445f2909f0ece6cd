package sessiond

import (
	"fmt"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"regexp"
	"strings"
	"time"
)

// Event is one sessiond event, decoded and checked: a committed event (Seq >= 1) from the stream,
// a live message or an export file, or a live-only one (Seq 0: text.delta and the like).
type Event struct {
	ID        string
	Type      string
	Version   int64
	SessionID string
	// Seq is the event's 1-based sequence within its session; 0 for a live-only event.
	Seq int64
	// Time is when the writer decided the event, in ms since the Unix epoch (the writer's clock).
	Time int64
	// Payload is the typed payload (*StepStarted, *TextCompleted, ...; *UnknownPayload only from
	// readers asked to keep unknown types).
	Payload Payload
	// Position is the stream sequence of the message that holds the event (0 when unknown).
	Position uint64
	// CommittedAt is when the log stored the event, in ms since the epoch (0 when unknown: live
	// messages do not carry it).
	CommittedAt int64
}

// LiveOnly reports an event that is never stored (no seq).
func (e Event) LiveOnly() bool { return e.Seq == 0 }

// At is Time as a time.Time.
func (e Event) At() time.Time { return time.UnixMilli(e.Time) }

// MarshalJSON writes the event as the Node client's JSON of it: id, type, version, sessionId,
// time, payload, then seq, position and committedAt when known.
func (e Event) MarshalJSON() ([]byte, error) { return wire.AppendJSON(nil, e.frame(frameJSON)) }

type frameKind int

const (
	// a stored batch's frame (encodeBatch): id, type, version, sessionId, seq, time, payload
	frameStored frameKind = iota
	// a live message (encodeLiveEvent): id, type, version, sessionId, time, payload, seq?, position?
	frameLive
	// an export file's frame (encodeEvent): id, type, version, sessionId, seq, time, payload, committedAt?
	frameExport
	// the Node client's event object: id, type, version, sessionId, time, payload, seq?, position?, committedAt?
	frameJSON
)

func (e *Event) frame(kind frameKind) Map {
	var payload any = payloadMap(e.Payload)
	if e.Payload == nil {
		payload = nil
	}
	m := Map{{Key: "id", Value: e.ID}, {Key: "type", Value: e.Type}, {Key: "version", Value: e.Version}, {Key: "sessionId", Value: e.SessionID}}
	switch kind {
	case frameStored, frameExport:
		m = append(m, MapEntry{Key: "seq", Value: e.Seq}, MapEntry{Key: "time", Value: e.Time}, MapEntry{Key: "payload", Value: payload})
		if kind == frameExport && e.CommittedAt != 0 {
			m = append(m, MapEntry{Key: "committedAt", Value: e.CommittedAt})
		}
	case frameLive, frameJSON:
		m = append(m, MapEntry{Key: "time", Value: e.Time}, MapEntry{Key: "payload", Value: payload})
		if e.Seq != 0 {
			m = append(m, MapEntry{Key: "seq", Value: e.Seq})
		}
		if e.Position != 0 {
			m = append(m, MapEntry{Key: "position", Value: e.Position})
		}
		if kind == frameJSON && e.CommittedAt != 0 {
			m = append(m, MapEntry{Key: "committedAt", Value: e.CommittedAt})
		}
	}
	return m
}

// Reader error codes (the protocol's): what a reader refuses a frame or message with.
const (
	CodeDecodeFailed            = "decode_failed"
	CodeUnknownEventType        = "unknown_event_type"
	CodeUnsupportedEventVersion = "unsupported_event_version"
	CodeInvalidPayload          = "invalid_payload"
	CodeInvalidID               = "invalid_id"
	CodePayloadTooLarge         = "payload_too_large"
)

// DecodeError is a frame or message a reader refused: Code is one of the Code* constants and
// Message says what was wrong, where, and what to do.
type DecodeError struct {
	Code    string
	Message string
	// Subject of the message, when it came from NATS.
	Subject string
	// Position is the stream sequence of a stored message (0 when not from the stream).
	Position uint64
	// Seq is the event's seq when the frame was readable that far (0 otherwise).
	Seq int64
}

func (e *DecodeError) Error() string { return e.Code + ": " + e.Message }

// MaxPayloadBytes is the largest payload a reader accepts in a live message or export frame
// (sessiond's DEFAULT_MAX_PAYLOAD_BYTES); a frame more than 4 KiB above it is payload_too_large.
const MaxPayloadBytes = 512 * 1024

// DecodeOption changes how a reader decodes.
type DecodeOption func(*decodeOptions)

type decodeOptions struct{ keepUnknown bool }

// KeepUnknown makes a reader keep events of a type, or a version, it does not know, with an
// *UnknownPayload (type, version, fields as they came), instead of refusing them with
// unknown_event_type or unsupported_event_version. Their envelope is checked all the same.
func KeepUnknown() DecodeOption { return func(o *decodeOptions) { o.keepUnknown = true } }

func optionsOf(opts []DecodeOption) decodeOptions {
	var o decodeOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// frameSource is where a frame came from and what it must match.
type frameSource struct {
	describe     string
	hint         string
	sessionID    string // the frame must belong to this session (when not empty)
	seqOptional  bool   // live messages: a live-only event has no seq
	position     *uint64
	committedAt  *int64
	stamped      bool // position and committedAt come from the reader, never from the frame
	livePosition bool // a live message: a numeric position must be a whole number >= 1
	keepUnknown  bool
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_\-:+=@]+$`)

// ValidID reports whether s is a valid sessiond id: 1-128 characters from A-Z a-z 0-9 _ - : + = @.
func ValidID(s string) bool { return len(s) >= 1 && len(s) <= 128 && idPattern.MatchString(s) }

// idProblem says what is wrong with an id (empty when it is valid).
func idProblem(s string) string {
	switch {
	case s == "":
		return "it is empty"
	case len(s) > 128 && utf16Len(s) > 128: // counted as sessiond counts (JavaScript's .length)
		return fmt.Sprintf("it is %d characters long", utf16Len(s))
	}
	for _, r := range s {
		if !idPattern.MatchString(string(r)) {
			if r < 0x20 || r == 0x7f {
				return fmt.Sprintf("it contains control character U+%04x", r)
			}
			return "it contains " + quoteJSON(string(r)) // JSON-quoted, as sessiond shows it
		}
	}
	return ""
}

func invalidIDMessage(role, s string) string {
	return fmt.Sprintf("Invalid %s %s: %s. Use 1-128 characters from A-Z a-z 0-9 _ - : + = @ (no dots, spaces, wildcards or control characters).", role, preview(s), idProblem(s))
}

// eventFromFrame checks one unpacked frame the way sessiond's reader does (same checks, same
// order, same codes) and returns the event.
func eventFromFrame(raw any, src frameSource) (Event, *DecodeError) {
	bad := func(code, why string) (Event, *DecodeError) {
		msg := fmt.Sprintf("%s is not a valid sessiond event: %s.", src.describe, why)
		if src.hint != "" {
			msg += " " + src.hint
		}
		return Event{}, &DecodeError{Code: code, Message: msg}
	}
	f, ok := raw.(Map)
	if !ok {
		return bad(CodeDecodeFailed, "expected a map")
	}
	get := func(k string) any { v, _ := f.Get(k); return v }
	id, idOK := get("id").(string)
	sessionID, sessionOK := get("sessionId").(string)
	if !idOK || !sessionOK {
		return bad(CodeDecodeFailed, "it lacks id or sessionId")
	}
	version, ok := wholeNumber(get("version"))
	if !ok || version < 1 {
		return bad(CodeDecodeFailed, fmt.Sprintf("version %s is not a whole number >= 1", previewField(f, "version")))
	}
	t, ok := wholeNumber(get("time"))
	if !ok || t < 0 {
		return bad(CodeDecodeFailed, fmt.Sprintf("time %s is not whole milliseconds since the epoch", previewField(f, "time")))
	}
	var seq int64
	rawSeq, hasSeq := f.Get("seq")
	if hasSeq || !src.seqOptional {
		n, ok := wholeNumber(rawSeq)
		if !ok || n < 1 || !hasSeq {
			return bad(CodeDecodeFailed, fmt.Sprintf("seq %s is not a whole number >= 1", previewField(f, "seq")))
		}
		seq = n
	}
	var committedAt int64
	if rawCommitted, has := f.Get("committedAt"); has {
		n, ok := wholeNumber(rawCommitted)
		if !ok || n < 0 {
			return bad(CodeDecodeFailed, fmt.Sprintf("committedAt %s is not whole milliseconds", preview(rawCommitted)))
		}
		committedAt = n
	}
	if src.sessionID != "" && sessionID != src.sessionID {
		return bad(CodeDecodeFailed, fmt.Sprintf("it belongs to session %s, not %s", preview(sessionID), src.sessionID))
	}
	typ, typeOK := get("type").(string)
	entry := catalogByType[typ]
	if !typeOK || (entry == nil && !src.keepUnknown) {
		return bad(CodeUnknownEventType, fmt.Sprintf("unknown event type %s (event %s, session %s): upgrade this client, or skip the event", previewField(f, "type"), id, sessionID))
	}
	if p := idProblem(sessionID); p != "" {
		return bad(CodeInvalidID, invalidIDMessage("session id", sessionID))
	}
	if p := idProblem(id); p != "" {
		return bad(CodeInvalidID, invalidIDMessage("event id", id))
	}
	rawPayload, _ := f.Get("payload")
	payload, eventVersion, perr := decodePayload(typ, version, rawPayload, src.keepUnknown)
	if perr != nil {
		return bad(perr.Code, perr.Message)
	}
	e := Event{ID: id, Type: typ, Version: eventVersion, SessionID: sessionID, Seq: seq, Time: t, Payload: payload}
	if src.stamped {
		if src.position != nil {
			e.Position = *src.position
		}
		if src.committedAt != nil {
			e.CommittedAt = *src.committedAt
		}
	} else {
		rawPosition := get("position")
		if p, ok := wholeNumber(rawPosition); ok && p > 0 {
			e.Position = uint64(p)
		} else if _, isInt := rawPosition.(int64); src.livePosition && isInt {
			return bad(CodeDecodeFailed, "position must be a whole number >= 1 when present")
		} else if _, isFloat := rawPosition.(float64); src.livePosition && isFloat {
			return bad(CodeDecodeFailed, "position must be a whole number >= 1 when present")
		}
		e.CommittedAt = committedAt
	}
	return e, nil
}

func previewField(f Map, key string) string {
	v, ok := f.Get(key)
	if !ok {
		return "undefined"
	}
	return preview(v)
}

// decodePayload checks a payload against its type's schema and returns it typed, with the
// version the event reads as.
func decodePayload(typ string, version int64, raw any, keepUnknown bool) (Payload, int64, *DecodeError) {
	entry := catalogByType[typ]
	unknown := func() (Payload, int64, *DecodeError) {
		fields, _ := raw.(Map)
		return &UnknownPayload{Type: typ, Version: version, Fields: fields}, version, nil
	}
	if entry == nil {
		return unknown()
	}
	if version > entry.Version {
		if keepUnknown {
			return unknown()
		}
		msg := fmt.Sprintf("Event %s has version %d, but this client reads version %d. Upgrade the client (or read with the version that wrote the log).", typ, version, entry.Version)
		return nil, 0, &DecodeError{Code: CodeUnsupportedEventVersion, Message: msg}
	}
	for v := version; v < entry.Version; v++ {
		up := upcasters[typ][v]
		if up == nil {
			if keepUnknown {
				return unknown()
			}
			msg := fmt.Sprintf("Event %s has version %d, and this client has no upcaster from version %d (it reads version %d).", typ, version, v, entry.Version)
			return nil, 0, &DecodeError{Code: CodeUnsupportedEventVersion, Message: msg}
		}
		if fields, isMap := raw.(Map); isMap { // (anything else is refused by the schema check below)
			raw = up(fields)
		}
	}
	p := entry.new()
	var is issues
	decodeStruct(reflectElem(p), raw, "payload", &is)
	if len(is) > 0 {
		return nil, 0, &DecodeError{Code: CodeInvalidPayload, Message: fmt.Sprintf("Event %s has an invalid payload: %s", typ, strings.Join(is, "; "))}
	}
	return p, entry.Version, nil
}
