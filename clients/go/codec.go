package sessiond

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"io"
	"strings"
)

// Subject names (src/nats/subjects.ts).
const (
	StreamName    = "SESSIOND_EVENTS"
	EventsPrefix  = "sessiond.events"
	LivePrefix    = "sessiond.live"
	CommandPrefix = "sessiond.cmd"
)

// EventsSubject is the stream subject of a session's log: sessiond.events.<session>.
func EventsSubject(sessionID string) string { return EventsPrefix + "." + sessionID }

// TenantPrefix starts the subjects of a tenant's user: sessiond.t.<tenant>.cmd.<verb> and
// sessiond.t.<tenant>.live.<session>.<type>.
const TenantPrefix = "sessiond.t"

// TenantCommandSubject is the subject of a verb sent as a tenant: sessiond.t.<tenant>.cmd.<verb>.
func TenantCommandSubject(tenant, verb string) string {
	return TenantPrefix + "." + tenant + ".cmd." + verb
}

// TenantLiveSubject is a tenant's copy of a live subject: sessiond.t.<tenant>.live.<session>.<type>
// (the worker publishes each event of a session the tenant owns there too, the same message).
func TenantLiveSubject(tenant, sessionID, eventType string) string {
	return TenantPrefix + "." + tenant + ".live." + sessionID + "." + eventType
}

// TenantInbox is the inbox prefix of a tenant's user: _INBOX_t.<tenant>.
func TenantInbox(tenant string) string { return "_INBOX_t." + tenant }

// LiveSubject is the live subject of one event: sessiond.live.<session>.<type>.
func LiveSubject(sessionID, eventType string) string {
	return LivePrefix + "." + sessionID + "." + eventType
}

const storedHint = "Was it published by something other than sessiond? (an unknown type or version: upgrade this client to read it)"

// DecodeStoredMessage decodes and checks one message of the events stream (a msgpack array of
// one session's durable event frames with consecutive seqs), as sessiond's reader does: every event gets
// Position = the message's stream sequence and CommittedAt = its stored time in ms (pass 0 when
// unknown; frames never carry it). A message that is not such an array is refused with a
// *DecodeError; readers of the stream skip it (quarantine) and report it.
func DecodeStoredMessage(data []byte, subject string, position uint64, committedAt int64, opts ...DecodeOption) ([]Event, error) {
	o := optionsOf(opts)
	where := fmt.Sprintf("Message %d on %s", position, subject)
	fail := func(code, msg string, seq int64) error {
		return &DecodeError{Code: code, Message: msg, Subject: subject, Position: position, Seq: seq}
	}
	raw, err := wire.DecodeMsgpack(data)
	if err != nil {
		return nil, fail(CodeDecodeFailed, fmt.Sprintf("%s cannot be read as a sessiond event batch: invalid msgpack (%v). %s", where, err, storedHint), 0)
	}
	frames, ok := raw.([]any)
	if !ok || len(frames) == 0 {
		return nil, fail(CodeDecodeFailed, fmt.Sprintf("%s cannot be read as a sessiond event batch: expected a non-empty array of events. %s", where, storedHint), 0)
	}
	sessionID := strings.TrimPrefix(subject, EventsPrefix+".")
	var stampedAt *int64
	if committedAt != 0 {
		stampedAt = &committedAt
	}
	events := make([]Event, 0, len(frames))
	for i, frame := range frames {
		e, derr := eventFromFrame(frame, frameSource{
			describe:    fmt.Sprintf("Frame %d of message %d on %s", i, position, subject),
			hint:        storedHint,
			sessionID:   sessionID,
			position:    &position,
			committedAt: stampedAt,
			stamped:     true,
			keepUnknown: o.keepUnknown,
		})
		if derr != nil {
			derr.Subject, derr.Position, derr.Seq = subject, position, seqOf(frame)
			return nil, derr
		}
		events = append(events, e)
	}
	for _, e := range events {
		if entry := catalogByType[e.Type]; entry != nil && !entry.Durable {
			// workers never store these: only something other than a worker stores one
			return nil, fail(CodeDecodeFailed, fmt.Sprintf("%s cannot be read as a sessiond event batch: it holds a %s event, which is live-only and never stored. %s", where, e.Type, storedHint), e.Seq)
		}
	}
	for i, e := range events {
		if i > 0 && e.Seq != events[0].Seq+int64(i) {
			return nil, fail(CodeDecodeFailed, fmt.Sprintf("%s cannot be read as a sessiond event batch: frame %d has seq %d, expected %d. %s", where, i, e.Seq, events[0].Seq+int64(i), storedHint), e.Seq)
		}
	}
	return events, nil
}

// EncodeStoredMessage is the canonical stream message of one append (what a worker stores): an
// array of frames { id, type, version, sessionId, seq, time, payload }.
func EncodeStoredMessage(events []Event) ([]byte, error) {
	frames := make([]any, len(events))
	for i := range events {
		frames[i] = events[i].frame(frameStored)
	}
	return wire.EncodeMsgpack(frames)
}

// DecodeLiveMessage decodes and checks one live message received on subject (a msgpack map
// { id, type, version, sessionId, time, payload, seq?, position? }), as the Node client does: the
// subject must be sessiond.live.<its session>.<its type>. A refusal is a *DecodeError whose Seq
// is the frame's seq when it was readable that far.
func DecodeLiveMessage(data []byte, subject string, opts ...DecodeOption) (Event, error) {
	return decodeLive(data, subject, "", opts)
}

// DecodeTenantLiveMessage is DecodeLiveMessage for a tenant's copy of a live message: the same
// checks, the subject being TenantLiveSubject(tenant, session, type).
func DecodeTenantLiveMessage(data []byte, subject, tenant string, opts ...DecodeOption) (Event, error) {
	return decodeLive(data, subject, tenant, opts)
}

func decodeLive(data []byte, subject, tenant string, opts []DecodeOption) (Event, error) {
	o := optionsOf(opts)
	describe := "Live message on " + subject
	hint := "Only sessiond workers should publish on sessiond.live.>."
	if len(data) > MaxPayloadBytes+4096 {
		return Event{}, &DecodeError{Code: CodePayloadTooLarge, Subject: subject,
			Message: fmt.Sprintf("%s is %d bytes, over the limit of %d bytes for a payload.", describe, len(data), MaxPayloadBytes)}
	}
	raw, err := wire.DecodeMsgpack(data)
	if err != nil {
		return Event{}, &DecodeError{Code: CodeDecodeFailed, Subject: subject,
			Message: fmt.Sprintf("%s is not a valid sessiond event: invalid msgpack (%v). %s", describe, err, hint)}
	}
	e, derr := eventFromFrame(raw, frameSource{describe: describe, hint: hint, seqOptional: true, livePosition: true, keepUnknown: o.keepUnknown})
	if derr != nil {
		derr.Subject, derr.Seq = subject, seqOf(raw)
		return Event{}, derr
	}
	expected := LiveSubject(e.SessionID, e.Type)
	if tenant != "" {
		expected = TenantLiveSubject(tenant, e.SessionID, e.Type)
	}
	if subject != expected {
		return Event{}, &DecodeError{Code: CodeDecodeFailed, Subject: subject, Seq: e.Seq,
			Message: fmt.Sprintf("%s is not a valid sessiond event: it says session %s and type %s, which belong on %s. %s", describe, e.SessionID, e.Type, expected, hint)}
	}
	return e, nil
}

// EncodeLiveMessage is the canonical live message of an event (what a worker publishes on
// LiveSubject(e.SessionID, e.Type)).
func EncodeLiveMessage(e Event) ([]byte, error) { return wire.EncodeMsgpack(e.frame(frameLive)) }

// seqOf is a frame's seq when it is a map with a whole seq >= 1 (0 otherwise).
func seqOf(raw any) int64 {
	if m, ok := raw.(Map); ok {
		if v, ok := m.Get("seq"); ok {
			if n, ok := wholeNumber(v); ok && n >= 1 {
				return n
			}
		}
	}
	return 0
}

// DecodeFrame decodes and checks one event frame on its own (an export file's): a map
// { id, type, version, sessionId, seq, time, payload, committedAt?, position? }.
func DecodeFrame(data []byte, opts ...DecodeOption) (Event, error) {
	return decodeFrame(data, fmt.Sprintf("Event frame (%d bytes)", len(data)), optionsOf(opts))
}

func decodeFrame(data []byte, describe string, o decodeOptions) (Event, error) {
	if len(data) > MaxPayloadBytes+4096 {
		return Event{}, &DecodeError{Code: CodePayloadTooLarge, Message: fmt.Sprintf("%s is %d bytes, over the limit of %d bytes for a payload.", describe, len(data), MaxPayloadBytes)}
	}
	raw, err := wire.DecodeMsgpack(data)
	if err != nil {
		return Event{}, &DecodeError{Code: CodeDecodeFailed, Message: fmt.Sprintf("%s is not a valid sessiond event: invalid msgpack (%v).", describe, err)}
	}
	e, derr := eventFromFrame(raw, frameSource{describe: describe, keepUnknown: o.keepUnknown})
	if derr != nil {
		derr.Seq = seqOf(raw)
		return Event{}, derr
	}
	return e, nil
}

// EncodeFrame is the canonical export frame of an event (sessiond's encodeEvent): { id, type,
// version, sessionId, seq, time, payload, committedAt? }.
func EncodeFrame(e Event) ([]byte, error) { return wire.EncodeMsgpack(e.frame(frameExport)) }

// Export file format.
const (
	ExportFormat  = "sessiond-export"
	ExportVersion = 1
)

const maxExportFrameBytes = 16 * 1024 * 1024

// ExportHeader is an export file's first frame.
type ExportHeader struct {
	Format  string
	Version int64
	// Created is when the file was written, in ms since the epoch.
	Created int64
	// Source is where the events were read from.
	Source string
	// Events is the number of event frames (-1 when unknown at write time; for one session, its last seq).
	Events int64
	// Fields holds the header map as it came (fields this client does not know included).
	Fields Map
}

// ExportReader reads an export file frame by frame: Header first, then Next until io.EOF.
type ExportReader struct {
	r      *bufio.Reader
	offset int64
	frame  int
	opts   decodeOptions
	header ExportHeader
}

// ExportError is a damaged export file: the frame and byte offset where reading stopped.
type ExportError struct {
	// Code is decode_failed (as sessiond's reader says; the frame's own refusal, a *DecodeError, is
	// Err), or unsupported_event_version for a file of a newer format version.
	Code    string
	Offset  int64
	Frame   int
	Message string
	Err     error
}

func (e *ExportError) Error() string { return e.Code + ": " + e.Message }
func (e *ExportError) Unwrap() error { return e.Err }

// NewExportReader reads the header of an export file and returns a reader of its events.
func NewExportReader(r io.Reader, opts ...DecodeOption) (*ExportReader, error) {
	x := &ExportReader{r: bufio.NewReaderSize(r, 1<<16), opts: optionsOf(opts)}
	body, err := x.next()
	if err == io.EOF {
		return nil, x.damaged(0, "the file is empty", nil)
	}
	if err != nil {
		return nil, err
	}
	raw, err := wire.DecodeMsgpack(body)
	if err != nil {
		return nil, x.damaged(0, fmt.Sprintf("unreadable header (%v)", err), err)
	}
	m, _ := raw.(Map)
	format, _ := m.Get("format")
	if format != ExportFormat {
		return nil, x.damaged(0, "not a sessiond export (bad header)", nil)
	}
	version, _ := m.Get("version")
	if v, ok := wholeNumber(version); !ok || v != ExportVersion {
		return nil, &ExportError{Code: CodeUnsupportedEventVersion, Message: fmt.Sprintf("The file is export format version %s; this client reads version %d. Use the sessiond that wrote it.", preview(version), ExportVersion)}
	}
	h := ExportHeader{Format: ExportFormat, Version: ExportVersion, Fields: m}
	if v, ok := m.Get("created"); ok {
		h.Created, _ = wholeNumber(v)
	}
	if v, ok := m.Get("source"); ok {
		h.Source, _ = v.(string)
	}
	h.Events = -1
	if v, ok := m.Get("events"); ok {
		if n, ok := wholeNumber(v); ok {
			h.Events = n
		}
	}
	x.header = h
	return x, nil
}

// Header is the file's header frame.
func (x *ExportReader) Header() ExportHeader { return x.header }

// Next returns the next event, or io.EOF after the last. A damaged frame is an *ExportError
// (the events before it were returned).
func (x *ExportReader) Next() (Event, error) {
	start := x.offset
	x.frame++
	body, err := x.next()
	if err != nil {
		return Event{}, err
	}
	e, err := decodeFrame(body, fmt.Sprintf("Frame %d", x.frame), x.opts)
	if err != nil {
		var derr *DecodeError
		errors.As(err, &derr)
		return Event{}, &ExportError{Code: CodeDecodeFailed, Offset: start, Frame: x.frame, Err: err,
			Message: fmt.Sprintf("the file is damaged at byte %d (frame %d): %s The %d events before it were read.", start, x.frame, derr.Message, x.frame-1)}
	}
	return e, nil
}

func (x *ExportReader) damaged(offset int64, why string, err error) error {
	return &ExportError{Code: CodeDecodeFailed, Offset: offset, Frame: x.frame, Err: err,
		Message: fmt.Sprintf("the file is damaged at byte %d (frame %d): %s. The %d events before it were read.", offset, x.frame, why, max(0, x.frame-1))}
}

// next is the next frame's body (io.EOF at the end of the file); x.frame numbers it.
func (x *ExportReader) next() ([]byte, error) {
	start := x.offset
	var head [4]byte
	n, err := io.ReadFull(x.r, head[:])
	if n == 0 && err == io.EOF {
		return nil, io.EOF
	}
	if err != nil {
		return nil, x.damaged(start, fmt.Sprintf("truncated frame length (%d of 4 bytes)", n), err)
	}
	size := binary.BigEndian.Uint32(head[:])
	if size == 0 || size > maxExportFrameBytes {
		return nil, x.damaged(start, fmt.Sprintf("impossible frame length %d", size), nil)
	}
	body := make([]byte, size)
	got, err := io.ReadFull(x.r, body)
	if err != nil {
		return nil, x.damaged(start+4, fmt.Sprintf("truncated frame (%d of %d bytes)", got, size), err)
	}
	x.offset += 4 + int64(size)
	return body, nil
}

// ReadExport reads a whole export file: its header and every event.
func ReadExport(r io.Reader, opts ...DecodeOption) (ExportHeader, []Event, error) {
	x, err := NewExportReader(r, opts...)
	if err != nil {
		return ExportHeader{}, nil, err
	}
	var events []Event
	for {
		e, err := x.Next()
		if err == io.EOF {
			return x.header, events, nil
		}
		if err != nil {
			return x.header, events, err
		}
		events = append(events, e)
	}
}

// WriteExport writes an export file: the header { format, version, created, source, events }
// and each event as an export frame, each frame prefixed by its length (4 bytes, big-endian).
func WriteExport(w io.Writer, created int64, source string, events []Event) error {
	frame := func(body []byte) error {
		var head [4]byte
		binary.BigEndian.PutUint32(head[:], uint32(len(body)))
		if _, err := w.Write(head[:]); err != nil {
			return err
		}
		_, err := w.Write(body)
		return err
	}
	header, err := wire.EncodeMsgpack(Map{{Key: "format", Value: ExportFormat}, {Key: "version", Value: int64(ExportVersion)}, {Key: "created", Value: created}, {Key: "source", Value: source}, {Key: "events", Value: int64(len(events))}})
	if err != nil {
		return err
	}
	if err := frame(header); err != nil {
		return err
	}
	for _, e := range events {
		body, err := EncodeFrame(e)
		if err != nil {
			return err
		}
		if err := frame(body); err != nil {
			return err
		}
	}
	return nil
}
