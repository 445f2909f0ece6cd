package sessiond

// The events verb against the test world: a settled session's events read through the workers are
// the stream's (seqs 1..n, in order), after a seq and at most a limit; events too big for one
// reply together come in several pages (cut to fit max_payload), each once; a session with no
// events is unknown_session, and bad options are refused before sending.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestEventsEndToEnd(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)

	// a turn run to its end, then another: the events are the stream's
	if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "one two three"}); err != nil {
		t.Fatal(err)
	}
	quiet(t, w, c, s, 15*time.Second)
	if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "four five"}); err != nil {
		t.Fatal(err)
	}
	want := quiet(t, w, c, s, 15*time.Second)
	n := int64(len(want))
	got, err := c.Events(ctx, s, EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameAsStream(t, got, want, true)
	for i, e := range got {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: want seqs 1..%d in order, got %v", i, e.Seq, n, seqsOf(got))
		}
	}
	if got[0].Type != "input.admitted" || got[0].Payload.(*InputAdmitted).Prompt.Text != "one two three" {
		t.Fatalf("first event %s", show(got[0]))
	}

	// after a seq, at most a limit
	page, err := c.Events(ctx, s, EventsOptions{AfterSeq: 2, Limit: 3})
	if err != nil || !slices.Equal(seqsOf(page), []int64{3, 4, 5}) {
		t.Fatalf("after 2, limit 3: %v %v", seqsOf(page), err)
	}
	sameAsStream(t, page, want[2:5], true)
	if tail, err := c.Events(ctx, s, EventsOptions{AfterSeq: n - 1, Limit: 10}); err != nil || !slices.Equal(seqsOf(tail), []int64{n}) {
		t.Fatalf("after %d, limit 10: %v %v", n-1, seqsOf(tail), err)
	}
	if none, err := c.Events(ctx, s, EventsOptions{AfterSeq: n}); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("after the last: %v %v", none, err)
	}
	if none, err := c.Events(ctx, s, EventsOptions{AfterSeq: n + 100}); err != nil || len(none) != 0 {
		t.Fatalf("after a seq past the last: %v %v", none, err)
	}
	// page by hand: each event once, in order
	var paged []Event
	for after := int64(0); ; {
		p, err := c.Events(ctx, s, EventsOptions{AfterSeq: after, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == 0 {
			break
		}
		paged = append(paged, p...)
		after = p[len(p)-1].Seq
	}
	sameAsStream(t, paged, want, true)

	// a session with no events; bad options and ids, refused before sending
	if _, err := c.Events(ctx, "go_nobody_"+s, EventsOptions{}); ErrorCode(err) != CodeUnknownSession || !strings.Contains(err.Error(), "go_nobody_"+s) {
		t.Fatalf("unknown session: %v", err)
	}
	for _, o := range []EventsOptions{{AfterSeq: -1}, {Limit: -1}, {AfterSeq: maxSafeInteger + 1}} {
		if _, err := c.Events(ctx, s, o); ErrorCode(err) != CodeInvalidOption {
			t.Fatalf("options %+v: %v", o, err)
		}
	}
	if _, err := c.Events(ctx, "no.dots", EventsOptions{}); ErrorCode(err) != CodeInvalidID {
		t.Fatalf("bad id: %v", err)
	}
	// the observer may read the stream, not send commands
	if _, err := w.connect(t, "observer").Events(ctx, s, EventsOptions{}); ErrorCode(err) != CodePermissionDenied {
		t.Fatalf("events as observer: %v", err)
	}
}

// Events too big for one reply together (ten prompts of 200 KB, one reply at most nats.conf's
// max_payload of 1 MB): the worker cuts the pages, Events asks again after the last seq of each.
func TestEventsPagesCutToMaxPayload(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)
	no := false
	for i := range 10 {
		prompt := fmt.Sprintf("%d %s", i, strings.Repeat("x", 200_000))
		if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: prompt, Wake: &no}); err != nil {
			t.Fatal(err)
		}
	}
	// the pages as the worker cuts them
	var sizes []int
	for after := int64(0); ; {
		var raw rawReply
		if _, err := c.send(ctx, VerbEvents, s, EventsBody(s, after, 0), "", &raw); err != nil {
			t.Fatal(err)
		}
		p, err := DecodeEventsReply(raw)
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > 1<<20 {
			t.Fatalf("a reply of %d bytes", len(raw))
		}
		sizes = append(sizes, len(p.Events))
		if !p.More {
			break
		}
		after = p.Events[len(p.Events)-1].Seq
	}
	if len(sizes) != 2 || sizes[0]+sizes[1] != 10 {
		t.Fatalf("pages of %v events: want the ten in two pages (five of 200 KB fit in 1 MB)", sizes)
	}
	got, err := c.Events(ctx, s, EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameAsStream(t, got, w.events(t, s), true)
	for i, e := range got {
		if p := e.Payload.(*InputAdmitted); e.Seq != int64(i+1) || !strings.HasPrefix(p.Prompt.Text, fmt.Sprintf("%d x", i)) {
			t.Fatalf("event %d: seq %d %s", i, e.Seq, e.Type)
		}
	}
	// a limit across pages
	if some, err := c.Events(ctx, s, EventsOptions{AfterSeq: 1, Limit: 7}); err != nil || !slices.Equal(seqsOf(some), []int64{2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("after 1, limit 7: %v %v", seqsOf(some), err)
	}
}

// A reply's events are checked as the stream's frames are: their seqs rising, each valid, an
// unknown type refused unless kept; a reply of another shape is internal.
func TestEventsReplyChecked(t *testing.T) {
	event := func(seq int, typ string) string {
		return fmt.Sprintf(`{"id":"evt_%d","type":%q,"version":1,"sessionId":"ses_1","time":1796056745917,"payload":{"tags":{"k":"v"}},"seq":%d,"position":%d}`, seq, typ, seq, seq+10)
	}
	reply := func(events ...string) []byte {
		return []byte(`{"ok":true,"events":[` + strings.Join(events, ",") + `],"more":false}`)
	}
	r, err := DecodeEventsReply(reply(event(1, "session.tagged"), event(2, "session.tagged")))
	if err != nil || len(r.Events) != 2 || r.Events[1].Position != 12 || r.Events[1].Payload.(*SessionTagged).Tags["k"] == nil || r.More {
		t.Fatalf("%+v %v", r, err)
	}
	for name, c := range map[string]struct {
		data []byte
		code string
	}{
		"seqs falling": {reply(event(2, "session.tagged"), event(1, "session.tagged")), CodeDecodeFailed},
		"seq repeated": {reply(event(1, "session.tagged"), event(1, "session.tagged")), CodeDecodeFailed},
		"unknown type": {reply(event(1, "session.renamed")), CodeUnknownEventType},
		"bad payload":  {reply(strings.Replace(event(1, "session.tagged"), `"v"`, `7`, 1)), CodeInvalidPayload},
		"no more":      {[]byte(`{"ok":true,"events":[]}`), CodeInternal},
		"error reply":  {[]byte(`{"ok":false,"error":{"code":"unknown_session","message":"m"}}`), CodeUnknownSession},
		"not a reply":  {[]byte(`[]`), CodeInternal},
		"events a map": {[]byte(`{"ok":true,"events":{},"more":false}`), CodeInternal},
	} {
		if _, err := DecodeEventsReply(c.data); ErrorCode(err) != c.code {
			t.Errorf("%s: %v, want %s", name, err, c.code)
		}
	}
	kept, err := DecodeEventsReply(reply(event(1, "session.renamed")), KeepUnknown())
	if err != nil || kept.Events[0].Payload.(*UnknownPayload).Type != "session.renamed" {
		t.Fatalf("kept: %+v %v", kept, err)
	}
	// of another session, or not after the seq asked for: refused where Events reads them
	if _, err := decodeEventsReply(reply(event(1, "session.tagged")), "ses_2", 0, decodeOptions{}); ErrorCode(err) != CodeDecodeFailed {
		t.Fatalf("another session's: %v", err)
	}
	if _, err := decodeEventsReply(reply(event(3, "session.tagged")), "ses_1", 3, decodeOptions{}); ErrorCode(err) != CodeDecodeFailed {
		t.Fatalf("not after the seq asked for: %v", err)
	}
}
