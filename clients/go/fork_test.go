package sessiond

// Forks end to end against the test world: a source's turn settled, forked (created, then the
// same again), the fork's status and its first event read back live and from the stream; a point
// inside a turn refused with not_settled, taken ids with session_exists; a prompt run in the fork.

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"
)

func TestForkEndToEnd(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()

	// a source with one turn, settled
	source := newSession(t)
	receipt, err := c.Admit(ctx, source, AdmitRequest{Prompt: "fork me", Tags: Tags{"side": "source"}})
	if err != nil || !receipt.Created {
		t.Fatalf("admit: %+v %v", receipt, err)
	}
	st := settled(t, c, source, "succeeded")
	if st.ForkedFrom != nil {
		t.Fatalf("the source is a fork: %s", st.Raw)
	}
	head := st.Seq

	// fork it at its last settled point (its head), with tags of its own
	fork := source + "_fork"
	res, err := c.Fork(ctx, source, fork, ForkOptions{Tags: Tags{"side": "fork", "branch": "alt"}})
	if err != nil || res.SessionID != fork || res.From != (ForkPoint{source, head}) || res.Seq != 1 || !res.Created || res.Items < 2 {
		t.Fatalf("fork: %+v %v (source at %d)", res, err, head)
	}
	// the same fork again (with and without its point): nothing written
	for _, o := range []ForkOptions{{}, {At: head}} {
		again, err := c.Fork(ctx, source, fork, o)
		if err != nil || again.Created || again.From != res.From || again.Seq != 1 || again.Items != 0 {
			t.Fatalf("fork again %+v: %+v %v", o, again, err)
		}
	}
	fst, err := c.Status(ctx, fork, 0)
	if err != nil || fst.ForkedFrom == nil || *fst.ForkedFrom != res.From || fst.Seq != 1 || fst.State != "idle" || fst.PendingCount != 0 ||
		!maps.Equal(fst.Tags, Tags{"side": "fork", "branch": "alt"}) {
		t.Fatalf("status of the fork: %s %v", fst.Raw, err)
	}
	if st, err := c.Status(ctx, source, 0); err != nil || st.Seq != head || st.ForkedFrom != nil || st.Tags["side"] != "source" {
		t.Fatalf("the source after the fork: %s %v", st.Raw, err)
	}

	// its first event, live (caught up) and from the stream: the source's conversation
	col := &collector{}
	sub, err := c.Subscribe(ctx, fork, 0, col.handle, append(col.options(), CatchUp())...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	waitFor(t, 10*time.Second, "the fork's first event", func() bool { return len(col.committed()) >= 1 })
	first := col.committed()[0]
	forked, ok := first.Payload.(*SessionForked)
	if !ok || first.Type != "session.forked" || first.Seq != 1 || forked.From != res.From || !maps.Equal(forked.Tags, Tags{"side": "fork", "branch": "alt"}) ||
		int64(len(forked.Transcript)) != res.Items {
		t.Fatalf("the fork's first event: %s", show(first))
	}
	user, ok := forked.Transcript[0].(*TranscriptUser)
	if !ok || user.InputID != receipt.InputID || user.Text != "fork me" || user.Delivery == nil || *user.Delivery != "queue" || user.Parts != nil {
		t.Fatalf("the forked prompt: %s", show(forked.Transcript[0]))
	}
	sourceEvents, err := c.Replay(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	var answered []string
	for _, item := range forked.Transcript[1:] {
		a, ok := item.(*TranscriptAssistant)
		if !ok || a.ExecutionID != user.ExecutionID || a.Status != "completed" {
			t.Fatalf("a forked step: %s", show(item))
		}
		for _, p := range a.Parts {
			if text, ok := p.(*TranscriptText); ok && text.Type == "text" {
				answered = append(answered, text.Text)
			}
		}
	}
	if want := texts(sourceEvents); strings.Join(answered, "") != strings.Join(want, "") || len(want) == 0 {
		t.Fatalf("the fork's answers %q, the source's %q", answered, want)
	}
	forkEvents, err := c.Replay(ctx, fork)
	if err != nil || len(forkEvents) != 1 {
		t.Fatalf("replay of the fork: %d events %v", len(forkEvents), err)
	}
	sameAsStream(t, forkEvents, w.events(t, fork), true)
	if !sameValue(payloadMap(forkEvents[0].Payload), payloadMap(forked)) {
		t.Fatalf("replayed %s, live %s", show(forkEvents[0].Payload), show(forked))
	}

	// inside the first turn: refused, naming the nearest settled points (1: the admission)
	_, err = c.Fork(ctx, source, newSession(t), ForkOptions{At: 2})
	var ce *CommandError
	if !asCommandError(err, &ce) || ce.Code != CodeNotSettled || ce.Verb != VerbFork || ce.Details["nearestBefore"] != float64(1) {
		t.Fatalf("fork at 2: %v %v", err, ce)
	}
	after, _ := ce.Details["nearestAfter"].(float64)
	if after <= 2 || after > float64(head) || !strings.Contains(ce.Message, "inside a turn") || !strings.Contains(ce.Message, fmt.Sprintf("Fork at 1 or %d", int64(after))) {
		t.Fatalf("fork at 2: %s %v", ce.Message, ce.Details)
	}
	// into a session that has events: the source's id, or the fork's at another point
	_, err = c.Fork(ctx, fork, source, ForkOptions{})
	if !asCommandError(err, &ce) || ce.Code != CodeSessionExists || ce.Details["sessionId"] != source || !strings.Contains(ce.Message, "already has") {
		t.Fatalf("fork into the source: %v", err)
	}
	_, err = c.Fork(ctx, source, fork, ForkOptions{At: 1})
	if !asCommandError(err, &ce) || ce.Code != CodeSessionExists || !strings.Contains(ce.Message, fmt.Sprintf("a fork of %s at sequence %d", source, head)) {
		t.Fatalf("fork into the fork at another point: %v", err)
	}
	// a session into itself, past the head, from a session with no events, a bad point or id
	if _, err := c.Fork(ctx, source, source, ForkOptions{}); ErrorCode(err) != CodeInvalidOption || !strings.Contains(err.Error(), "into itself") {
		t.Fatalf("fork into itself: %v", err)
	}
	if _, err := c.Fork(ctx, source, newSession(t), ForkOptions{At: head + 1}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("fork past the head: %v", err)
	}
	if _, err := c.Fork(ctx, newSession(t), newSession(t), ForkOptions{}); ErrorCode(err) != CodeUnknownSession {
		t.Fatalf("fork of a session with no events: %v", err)
	}
	if _, err := c.Fork(ctx, source, newSession(t), ForkOptions{At: -1}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("fork at -1: %v", err)
	}
	if _, err := c.Fork(ctx, "ses.dot", newSession(t), ForkOptions{}); ErrorCode(err) != CodeInvalidID || !strings.Contains(err.Error(), "source session id") {
		t.Fatalf("fork of an invalid source id: %v", err)
	}
	if _, err := c.Fork(ctx, source, "ses.dot", ForkOptions{}); ErrorCode(err) != CodeInvalidID {
		t.Fatalf("fork into an invalid session id: %v", err)
	}

	// the fork lives its own life: a prompt runs there, after the forked conversation; the forked
	// prompt's input id is taken in it
	if _, err := c.Admit(ctx, fork, AdmitRequest{ID: receipt.InputID, Prompt: "something else"}); ErrorCode(err) != CodeInputConflict {
		t.Fatalf("admit the forked input id again: %v", err)
	}
	if r, err := c.Admit(ctx, fork, AdmitRequest{Prompt: "and then"}); err != nil || r.AdmittedSeq != 2 {
		t.Fatalf("admit to the fork: %+v %v", r, err)
	}
	settled(t, c, fork, "succeeded")
	if st, err := c.Status(ctx, source, 0); err != nil || st.Seq != head {
		t.Fatalf("the source moved: %s %v", st.Raw, err)
	}
}
