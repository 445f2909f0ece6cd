package sessiond

// Waits against the test world: Approve, Deny and Resolve on the resolve verb. A session that waits
// for nothing refuses them (no_such_wait); with the world's echo worker replaced by one whose runner
// waits (clients/testing/waits-runner.ts), turns wait for a signal and for a person's decision on a call,
// are resolved, and resume.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// refused checks that err is the worker's command_refused with this reason.
func refused(t *testing.T, err error, reason, mentions string) {
	t.Helper()
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Code != CodeCommandRefused || ce.Verb != VerbResolve || ce.Details["reason"] != reason || !strings.Contains(ce.Message, mentions) {
		t.Fatalf("want command_refused %s naming %s, got %v (details %v)", reason, mentions, err, ce)
	}
}

func TestResolveRefusedWhenNothingWaits(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)
	w.admit(t, s, "nothing to wait for")
	quiet(t, w, c, s, 15*time.Second)

	_, err := c.Approve(ctx, s, "call_none", "looks right")
	refused(t, err, "no_such_wait", "call_none")
	_, err = c.Deny(ctx, s, "call_none", "")
	refused(t, err, "no_such_wait", "call_none")
	_, err = c.Resolve(ctx, s, "payment", Map{{Key: "amount", Value: 12.5}})
	refused(t, err, "no_such_wait", "payment")
	st, err := c.Status(ctx, s, 0)
	if err != nil || st.Waits == nil || len(st.Waits) != 0 || st.Outcome == nil || *st.Outcome != "succeeded" {
		t.Fatalf("status %+v %v", st, err)
	}
	// what the worker refuses as a bad request, and what is refused before it is sent
	if _, err := c.Resolve(ctx, s, strings.Repeat("n", 201), nil); ErrorCode(err) != CodeBadRequest {
		t.Fatalf("a name of 201 characters: %v", err)
	}
	if _, err := c.Deny(ctx, s, "call_none", strings.Repeat("r", 1001)); ErrorCode(err) != CodeBadRequest {
		t.Fatalf("a reason of 1001 characters: %v", err)
	}
	if _, err := c.Approve(ctx, "ses.dot", "call_none", ""); ErrorCode(err) != CodeInvalidID {
		t.Fatalf("invalid session id: %v", err)
	}
	if _, err := c.Resolve(ctx, s, "payment", "bad \xff utf-8"); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("invalid UTF-8 data: %v", err)
	}
}

func TestWaitsResolvedEndToEnd(t *testing.T) {
	w := getWorld(t)
	w.waitingWorker(t)
	c := w.connect(t, "client")
	ctx := context.Background()

	t.Run("signal", func(t *testing.T) {
		s := newSession(t)
		r, err := c.Admit(ctx, s, AdmitRequest{Prompt: "wait for payment"})
		if err != nil {
			t.Fatal(err)
		}
		st := waiting(t, c, s)
		wt := st.Waits[0]
		if wt.Kind != "signal" || wt.Name != "payment" || st.ExecutionID == nil || wt.ExecutionID != *st.ExecutionID || wt.Since <= 0 ||
			wt.Until != nil || wt.CallID != nil || wt.Tool != nil || wt.Input.Set || wt.Data.Set || wt.Started || wt.ResolvedAt != nil {
			t.Fatalf("wait %s", show(wt))
		}
		if st.Execution == nil || st.Execution.Outcome == nil || *st.Execution.Outcome != "waiting" || st.PendingCount != 0 {
			t.Fatalf("status %s", st.Raw)
		}
		// the wrong wait, then the right one, then the same again
		_, err = c.Approve(ctx, s, "payment", "")
		refused(t, err, "no_such_wait", "payment")
		res, err := c.Resolve(ctx, s, "payment", Map{{Key: "amount", Value: 12.5}, {Key: "ok", Value: true}})
		if err != nil || !res.Resolved || res.SessionID != s || res.Kind != "signal" || res.Name != "payment" || res.Outcome != "delivered" || res.Seq <= st.Seq || res.ResumeInputID == "" {
			t.Fatalf("resolve %+v %v", res, err)
		}
		again, err := c.Resolve(ctx, s, "payment", Map{{Key: "amount", Value: 12.5}, {Key: "ok", Value: true}})
		if err != nil || again.Resolved || again.Seq != 0 || again.ResumeInputID != "" || again.Outcome != "delivered" {
			t.Fatalf("resolve again %+v %v", again, err)
		}
		done := settled(t, c, s, "succeeded")
		if len(done.Waits) != 0 || done.Execution.ID == wt.ExecutionID {
			t.Fatalf("after the resume: %s", done.Raw)
		}
		events, err := c.Replay(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		started := only[*WaitStarted](t, events)
		resolved := only[*WaitResolved](t, events)
		if started.Kind != "signal" || started.Name != "payment" || started.ExecutionID != wt.ExecutionID {
			t.Fatalf("wait.started %s", show(started))
		}
		if resolved.Kind != "signal" || resolved.Outcome != "delivered" || resolved.ExecutionID != wt.ExecutionID || !resolved.Data.Set ||
			!sameValue(resolved.Data.Value, Map{{Key: "amount", Value: 12.5}, {Key: "ok", Value: true}}) || resolved.Reason != nil {
			t.Fatalf("wait.resolved %s", show(resolved))
		}
		if e := events[res.Seq-1]; e.Type != "wait.resolved" {
			t.Fatalf("seq %d is %s, want the wait.resolved", res.Seq, e.Type)
		}
		resume := inputAdmitted(t, events, res.ResumeInputID)
		if resume.Source != "recovery" || resume.Continues == nil || resume.Continues.Reason != "resumed" || resume.Continues.ExecutionID != wt.ExecutionID ||
			!slices.Equal(resume.Continues.InputIDs, []string{r.InputID}) {
			t.Fatalf("the resume input %s", show(resume))
		}
		if got := texts(events); !slices.Equal(got, []string{`got payment: {"amount":12.5,"ok":true}`}) {
			t.Fatalf("texts %q", got)
		}
		settles := settleOutcomes(events)
		if !slices.Equal(settles, []string{"waiting", "succeeded"}) {
			t.Fatalf("settled %v", settles)
		}
	})

	t.Run("approved", func(t *testing.T) {
		s := newSession(t)
		if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "ask to run deploy"}); err != nil {
			t.Fatal(err)
		}
		wt := waiting(t, c, s).Waits[0]
		if wt.Kind != "approval" || wt.CallID == nil || wt.Name != *wt.CallID || wt.MessageID == nil || wt.Tool == nil || *wt.Tool != "deploy" ||
			!wt.Input.Set || !sameValue(wt.Input.Value, Map{{Key: "asked", Value: "ask to run deploy"}}) || wt.Durable || wt.Started {
			t.Fatalf("wait %s", show(wt))
		}
		res, err := c.Approve(ctx, s, *wt.CallID, "looks right")
		if err != nil || !res.Resolved || res.Kind != "approval" || res.Outcome != "approved" || res.Name != *wt.CallID || res.ResumeInputID == "" {
			t.Fatalf("approve %+v %v", res, err)
		}
		if again, err := c.Approve(ctx, s, *wt.CallID, "looks right"); err != nil || again.Resolved {
			t.Fatalf("approve again %+v %v", again, err)
		}
		// a second decision, another one: refused, naming the first
		_, err = c.Deny(ctx, s, *wt.CallID, "changed my mind")
		refused(t, err, "already_resolved", "approved")
		settled(t, c, s, "succeeded")
		events, err := c.Replay(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		called := only[*ToolCalled](t, events)
		resolved := only[*WaitResolved](t, events)
		if called.CallID != *wt.CallID || called.Started || called.Name != "deploy" {
			t.Fatalf("tool.called %s", show(called))
		}
		if resolved.Outcome != "approved" || resolved.CallID == nil || *resolved.CallID != *wt.CallID || resolved.Reason == nil || *resolved.Reason != "looks right" {
			t.Fatalf("wait.resolved %s", show(resolved))
		}
		if toolStarted := only[*ToolStarted](t, events); toolStarted.CallID != *wt.CallID || toolStarted.MessageID != *wt.MessageID {
			t.Fatalf("tool.started %s", show(toolStarted))
		}
		if ok := only[*ToolSucceeded](t, events); !sameValue(ok.Output.Value, Map{{Key: "tool", Value: "deploy"}, {Key: "callId", Value: *wt.CallID}}) {
			t.Fatalf("tool.succeeded %s", show(ok))
		}
		if got := texts(events); !slices.Equal(got, []string{"ran deploy"}) {
			t.Fatalf("texts %q", got)
		}
	})

	t.Run("denied", func(t *testing.T) {
		s := newSession(t)
		if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "ask to run drop_tables"}); err != nil {
			t.Fatal(err)
		}
		wt := waiting(t, c, s).Waits[0]
		res, err := c.Deny(ctx, s, *wt.CallID, "not today")
		if err != nil || !res.Resolved || res.Outcome != "denied" || res.ResumeInputID == "" {
			t.Fatalf("deny %+v %v", res, err)
		}
		_, err = c.Approve(ctx, s, *wt.CallID, "")
		refused(t, err, "already_resolved", "denied")
		settled(t, c, s, "succeeded")
		events, err := c.Replay(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if resolved := only[*WaitResolved](t, events); resolved.Outcome != "denied" || resolved.Reason == nil || *resolved.Reason != "not today" {
			t.Fatalf("wait.resolved %s", show(resolved))
		}
		if slices.ContainsFunc(events, func(e Event) bool { return e.Type == "tool.started" }) {
			t.Fatal("a denied call started")
		}
		if got := texts(events); !slices.Equal(got, []string{"denied drop_tables: not today"}) {
			t.Fatalf("texts %q", got)
		}
	})
}

// waiting waits until the session's turn has settled waiting for one open wait, and returns the status.
func waiting(t *testing.T, c *Client, session string) Status {
	t.Helper()
	var st Status
	waitFor(t, 15*time.Second, "session "+session+" to wait", func() bool {
		var err error
		st, err = c.Status(context.Background(), session, 0)
		return err == nil && st.Outcome != nil && *st.Outcome == "waiting" && len(st.Waits) == 1 && st.Waits[0].Outcome == nil
	})
	return st
}

// settled waits until the session's last execution ended so, with nothing pending.
func settled(t *testing.T, c *Client, session, outcome string) Status {
	t.Helper()
	var st Status
	waitFor(t, 15*time.Second, "session "+session+" to settle "+outcome, func() bool {
		var err error
		st, err = c.Status(context.Background(), session, 0)
		return err == nil && st.PendingCount == 0 && st.Execution != nil && st.Execution.Outcome != nil && *st.Execution.Outcome == outcome
	})
	return st
}

// only is the payload of the one event of its type.
func only[P Payload](t *testing.T, events []Event) P {
	t.Helper()
	var found []P
	for _, e := range events {
		if p, ok := e.Payload.(P); ok {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		var zero P
		t.Fatalf("%d events of type %s, want 1", len(found), zero.EventType())
	}
	return found[0]
}

func inputAdmitted(t *testing.T, events []Event, inputID string) *InputAdmitted {
	t.Helper()
	for _, e := range events {
		if p, ok := e.Payload.(*InputAdmitted); ok && p.InputID == inputID {
			return p
		}
	}
	t.Fatalf("no input.admitted of %s", inputID)
	return nil
}

func texts(events []Event) []string {
	var out []string
	for _, e := range events {
		if p, ok := e.Payload.(*TextCompleted); ok {
			out = append(out, p.Text)
		}
	}
	return out
}

func settleOutcomes(events []Event) []string {
	var out []string
	for _, e := range events {
		if p, ok := e.Payload.(*ExecutionSettled); ok {
			out = append(out, p.Outcome)
		}
	}
	return out
}

// waitingWorker replaces the world's workers, for the rest of the test, with one sessiond worker
// whose runner waits (clients/testing/waits-runner.ts); an echo worker of the world's takes over after it.
func (w *world) waitingWorker(t *testing.T) {
	t.Helper()
	for _, index := range w.workers {
		w.do(t, map[string]any{"cmd": "kill_worker", "index": index})
	}
	w.workers = nil
	t.Cleanup(func() {
		answer := w.do(t, map[string]any{"cmd": "start_worker"})
		n, _ := answer.Get("index")
		w.workers = append(w.workers, int(n.(int64)))
	})
	db := filepath.Join(t.TempDir(), "waits.db")
	cmd := exec.Command("node", "bin/sessiond.js", "start", "--nats", w.url, "--nats-user", w.users["worker"].User,
		"--nats-commands-user", w.users["commands"].User, "--db", db, "--runner", "clients/testing/waits-runner.ts",
		"--lease-ms", "2000", "--heartbeat-ms", "500", "--sweep-ms", "300")
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), "FORCE_COLOR=0", "SESSIOND_LOG_FORMAT=text",
		"SESSIOND_NATS_PASS="+w.users["worker"].Pass, "SESSIOND_NATS_COMMANDS_PASS="+w.users["commands"].Pass)
	out := &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("the waiting worker's output (last part):\n%s", out.String())
		}
	})
	deadline := time.After(60 * time.Second)
	for !strings.Contains(out.String(), "send it a prompt") {
		select {
		case <-exited:
			t.Fatalf("the waiting worker exited before it was ready:\n%s", out.String())
		case <-deadline:
			t.Fatalf("the waiting worker was not ready within 60 s:\n%s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
