package sessiond

import (
	"context"
	"fmt"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
)

// A session's history through the workers (the events verb, src/nats/command-service.ts): its
// committed events page by page, in the Node client's JSON of them, for a user that may send
// commands, with no consumer on the stream.

// EventsPage is the most events one events reply holds (sessiond's EVENTS_PAGE); a reply holds
// fewer when they would pass the server's max_payload.
const EventsPage = 500

// EventsOptions is what Events takes. AfterSeq: only the events after this seq (0: from the
// first). Limit: at most this many (0: every one). Decode: how the events are read (e.g.
// KeepUnknown(), to keep an event of a type this client does not know rather than fail).
type EventsOptions struct {
	AfterSeq int64
	Limit    int
	Decode   []DecodeOption
}

// EventsReply is the events reply: a page of the session's committed events after the seq asked
// for, in order. More: another page may follow (ask again after the last seq).
type EventsReply struct {
	Events []Event
	More   bool
}

// EventsBody is the events request's JSON body (afterSeq and limit left out when 0: the worker
// reads from the first event, EventsPage at most).
func EventsBody(sessionID string, afterSeq int64, limit int) Map {
	m := Map{{Key: "sessionId", Value: sessionID}}
	if afterSeq != 0 {
		m = append(m, MapEntry{Key: "afterSeq", Value: afterSeq})
	}
	if limit != 0 {
		m = append(m, MapEntry{Key: "limit", Value: int64(limit)})
	}
	return m
}

// DecodeEventsReply reads an events reply: the worker's error reply as a *CommandError; each event
// checked as the stream's reader checks a frame (the same codes, as a *DecodeError), their seqs
// rising. Position and CommittedAt are what the reply says (0 when it says none).
func DecodeEventsReply(data []byte, opts ...DecodeOption) (EventsReply, error) {
	return decodeEventsReply(data, "", 0, optionsOf(opts))
}

const eventsHint = "Is something other than a sessiond worker answering sessiond.cmd.events? (an unknown type or version: upgrade this client, or read with KeepUnknown())"

// decodeEventsReply: with sessionID given, each event must be of that session and after afterSeq.
func decodeEventsReply(data []byte, sessionID string, afterSeq int64, o decodeOptions) (EventsReply, error) {
	if err := DecodeReply(VerbEvents, data, nil); err != nil {
		return EventsReply{}, err
	}
	shape := func(why string) error {
		return &CommandError{Verb: VerbEvents, Code: CodeInternal,
			Message: fmt.Sprintf("The reply to events on %s does not have the shape of an events reply (%s): do the worker and this client speak the same protocol version?", CommandSubject(VerbEvents), why)}
	}
	parsed, err := wire.ParseJSON(data)
	if err != nil {
		return EventsReply{}, shape(err.Error())
	}
	reply, _ := parsed.(Map)
	rawList, _ := reply.Get("events")
	rawMore, _ := reply.Get("more")
	list, isList := rawList.([]any)
	more, isBool := rawMore.(bool)
	if !isList || !isBool {
		return EventsReply{}, shape("it needs an events array and more, a boolean")
	}
	out := EventsReply{Events: make([]Event, 0, len(list)), More: more}
	last := afterSeq
	for i, raw := range list {
		describe := fmt.Sprintf("Event %d of the events reply", i)
		if sessionID != "" {
			describe += " for session " + sessionID
		}
		e, derr := eventFromFrame(raw, frameSource{describe: describe, hint: eventsHint, sessionID: sessionID, livePosition: true, keepUnknown: o.keepUnknown})
		if derr == nil && e.Seq <= last {
			derr = &DecodeError{Code: CodeDecodeFailed, Message: fmt.Sprintf("%s is not a valid sessiond event: its seq %d is not after %d. %s", describe, e.Seq, last, eventsHint)}
		}
		if derr != nil {
			derr.Subject, derr.Seq = CommandSubject(VerbEvents), seqOf(raw)
			return EventsReply{}, derr
		}
		last = e.Seq
		out.Events = append(out.Events, e)
	}
	return out, nil
}

// Events is the session's committed events after o.AfterSeq, in order, at most o.Limit (0: every
// one), read from the workers with the events command, EventsPage at a time (fewer when a page
// would pass the server's max_payload), until a reply says no more follow. It needs no consumer on
// the stream, only the right to send commands. A session with no events is unknown_session; an
// event too big for one reply payload_too_large (read it with Replay); an event of a type this
// client does not know is refused (a *DecodeError, unknown_event_type) unless o.Decode keeps it.
//
//	events, err := c.Events(ctx, "ses_1", sessiond.EventsOptions{AfterSeq: 10, Limit: 100})
//	// events[0].Seq: 11, in order, each once
func (c *Client) Events(ctx context.Context, sessionID string, o EventsOptions) ([]Event, error) {
	if o.AfterSeq < 0 || o.AfterSeq > maxSafeInteger {
		return nil, &CommandError{Verb: VerbEvents, Code: CodeInvalidOption,
			Message: fmt.Sprintf("Invalid afterSeq %d: give a whole number >= 0 (the seq of the last event already read).", o.AfterSeq)}
	}
	if o.Limit < 0 {
		return nil, &CommandError{Verb: VerbEvents, Code: CodeInvalidOption,
			Message: fmt.Sprintf("Invalid limit %d: give a whole number >= 1, or 0 for every event.", o.Limit)}
	}
	decode := optionsOf(o.Decode)
	events := []Event{}
	last := o.AfterSeq
	for {
		want := EventsPage
		if o.Limit > 0 {
			want = min(want, o.Limit-len(events))
		}
		var raw rawReply
		if _, err := c.send(ctx, VerbEvents, sessionID, EventsBody(sessionID, last, want), "", &raw); err != nil {
			return nil, err
		}
		page, err := decodeEventsReply(raw, sessionID, last, decode)
		if err != nil {
			return nil, err
		}
		if len(page.Events) > want { // never more than asked for
			page.Events = page.Events[:want]
		}
		events = append(events, page.Events...)
		if !page.More || len(page.Events) == 0 || (o.Limit > 0 && len(events) >= o.Limit) {
			return events, nil
		}
		last = page.Events[len(page.Events)-1].Seq
	}
}

// rawReply keeps a reply's bytes as they came (DecodeReply has checked it is a success reply).
type rawReply []byte

func (r *rawReply) UnmarshalJSON(data []byte) error {
	*r = append((*r)[:0], data...)
	return nil
}
