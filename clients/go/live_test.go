package sessiond

// Against the test world: commands as each user, subscriptions across a worker's SIGKILL and a
// nats-server restart, replay against the stream as the Node client reads it, invalid messages.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// collector gathers what a subscription delivers.
type collector struct {
	mu       sync.Mutex
	all      []Event
	invalid  []InvalidMessage
	errs     []error
	lastType string
}

func (c *collector) handle(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all = append(c.all, e)
	c.lastType = e.Type
}

func (c *collector) committed() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Event
	for _, e := range c.all {
		if e.Seq != 0 {
			out = append(out, e)
		}
	}
	return out
}

func (c *collector) has(pred func(Event) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.all, pred)
}

func (c *collector) options() []SubscribeOption {
	return []SubscribeOption{
		OnInvalid(func(i InvalidMessage) { c.mu.Lock(); c.invalid = append(c.invalid, i); c.mu.Unlock() }),
		OnError(func(err error) { c.mu.Lock(); c.errs = append(c.errs, err); c.mu.Unlock() }),
	}
}

func isType(typ string) func(Event) bool { return func(e Event) bool { return e.Type == typ } }

// sameAsStream checks events against the stream as the Node client reads it (the world's
// events): the same events, each once, in order, with the same ids, seqs, types, positions and
// payloads (and stored times where the reader knows them).
func sameAsStream(t *testing.T, got []Event, want []Map, withCommittedAt bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, the stream holds %d:\n got seqs %v\nwant seqs %v", len(got), len(want), seqsOf(got), wantSeqs(want))
	}
	for i, e := range got {
		w := want[i]
		if e.ID != str(w, "id") || float64(e.Seq) != mustNumber(get(w, "seq")) || e.Type != str(w, "type") || e.SessionID != str(w, "sessionId") ||
			float64(e.Time) != mustNumber(get(w, "time")) || float64(e.Position) != mustNumber(get(w, "position")) {
			t.Fatalf("event %d is %s seq %d %s at %d, the stream's is %s", i, e.ID, e.Seq, e.Type, e.Position, show(w))
		}
		if !sameUnordered(payloadMap(e.Payload), get(w, "payload")) {
			t.Fatalf("event %d (seq %d) payload %s, the stream's %s", i, e.Seq, show(payloadMap(e.Payload)), show(get(w, "payload")))
		}
		if withCommittedAt && float64(e.CommittedAt) != mustNumber(get(w, "committedAt")) {
			t.Fatalf("event %d (seq %d) committedAt %d, the stream's %v", i, e.Seq, e.CommittedAt, get(w, "committedAt"))
		}
	}
}

func seqsOf(events []Event) []int64 {
	var out []int64
	for _, e := range events {
		out = append(out, e.Seq)
	}
	return out
}

func wantSeqs(events []Map) []int64 {
	var out []int64
	for _, e := range events {
		n, _ := get(e, "seq").(int64)
		out = append(out, n)
	}
	return out
}

// quiet waits until the session has no turn running and nothing pending (its log is final until
// the next prompt), then returns the stream's events.
func quiet(t *testing.T, w *world, c *Client, session string, timeout time.Duration) []Map {
	t.Helper()
	ctx := context.Background()
	waitFor(t, timeout, "session "+session+" to finish its turns", func() bool {
		st, err := c.Status(ctx, session, 0)
		if err != nil {
			return false
		}
		return (st.State == "settled" || st.State == "idle") && st.PendingCount == 0 && st.Execution != nil && st.Execution.Outcome != nil && *st.Execution.Outcome != "released"
	})
	return w.events(t, session)
}

// delivered waits until the collector holds as many committed events as the stream.
func delivered(t *testing.T, col *collector, want []Map) []Event {
	t.Helper()
	waitFor(t, 15*time.Second, fmt.Sprintf("%d committed events to be delivered", len(want)), func() bool { return len(col.committed()) >= len(want) })
	return col.committed()
}

func TestCommandsAsClient(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)

	// an admission, then the same input again: admitted once
	no := false
	r1, err := c.Admit(ctx, s, AdmitRequest{Prompt: "first", ID: "inp_" + s + "_1", Wake: &no})
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Created || r1.AdmittedSeq != 1 || r1.SessionID != s || r1.InputID != "inp_"+s+"_1" || r1.Wake {
		t.Fatalf("receipt %+v", r1)
	}
	r2, err := c.Admit(ctx, s, AdmitRequest{Prompt: "first", ID: "inp_" + s + "_1", Wake: &no})
	if err != nil || r2.Created || r2.AdmittedSeq != 1 {
		t.Fatalf("again: %+v %v", r2, err)
	}
	// the same id with another prompt is a conflict
	_, err = c.Admit(ctx, s, AdmitRequest{Prompt: "other", ID: "inp_" + s + "_1"})
	if ErrorCode(err) != CodeInputConflict {
		t.Fatalf("conflict: %v", err)
	}
	// an id is generated when none is given
	r3, err := c.Admit(ctx, s, AdmitRequest{Prompt: "second", Wake: &no, Delivery: "queue"})
	if err != nil || !strings.HasPrefix(r3.InputID, "inp_") || r3.AdmittedSeq != 2 {
		t.Fatalf("generated id: %+v %v", r3, err)
	}
	st, err := c.Status(ctx, s, 0)
	if err != nil || st.State != "idle" || st.Seq != 2 || st.PendingCount != 2 || len(st.Pending) != 2 || st.Pending[0].InputID != r1.InputID || st.Execution != nil {
		t.Fatalf("status %+v %v", st, err)
	}
	if st2, err := c.Status(ctx, s, 1); err != nil || st2.PendingFrom != 1 || len(st2.Pending) != 1 || st2.Pending[0].InputID != r3.InputID {
		t.Fatalf("status from 1: %+v %v", st2, err)
	}
	// drop one, nothing then to cancel, then wake the other
	d, err := c.Drop(ctx, s, DropRequest{InputIDs: []string{r1.InputID}, Reason: "not wanted"})
	if err != nil || !slices.Equal(d.Dropped, []string{r1.InputID}) || d.Seq != 3 {
		t.Fatalf("drop %+v %v", d, err)
	}
	cr, err := c.Cancel(ctx, s, CancelRequest{})
	if err != nil || cr.Cancelled || cr.Reason != "nothing_to_cancel" {
		t.Fatalf("cancel %+v %v", cr, err)
	}
	wr, err := c.Wake(ctx, s)
	if err != nil || (wr.Status != "started" && wr.Status != "running_here") {
		t.Fatalf("wake %+v %v", wr, err)
	}
	events := quiet(t, w, c, s, 15*time.Second)
	if get(events[2], "type") != "input.dropped" || get(events[len(events)-1], "type") != "execution.settled" {
		t.Fatalf("events %v", events)
	}
	if d, err := c.Drop(ctx, s, DropRequest{}); err != nil || len(d.Dropped) != 0 || d.Seq != 0 {
		t.Fatalf("drop of nothing: %+v %v", d, err)
	}

	// cancelling a turn in progress
	col := &collector{}
	sub, err := c.Subscribe(ctx, s, int64(len(events)), col.handle, col.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "a long answer to cancel"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the turn to start", func() bool { return col.has(isType("step.started")) })
	cr, err = c.Cancel(ctx, s, CancelRequest{Reason: "the test stops it"})
	if err != nil || !cr.Cancelled || cr.ExecutionID == "" {
		t.Fatalf("cancel in progress: %+v %v", cr, err)
	}
	waitFor(t, 10*time.Second, "execution.cancelled", func() bool {
		return col.has(func(e Event) bool {
			p, ok := e.Payload.(*ExecutionCancelled)
			return ok && p.ExecutionID == cr.ExecutionID && p.Reason != nil && *p.Reason == "the test stops it"
		})
	})

	// refusals: by the worker, and before sending
	if _, err := c.Status(ctx, "go_nobody_"+s, 0); ErrorCode(err) != CodeUnknownSession {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "x", Delivery: "now"}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("bad delivery: %v", err)
	}
	var ce *CommandError
	if _, err := c.Status(ctx, "ses.dot", 0); !errors.As(err, &ce) || ce.Code != CodeInvalidID || !strings.Contains(ce.Message, "ses.dot") {
		t.Fatalf("invalid id: %v", err)
	}
	if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "bad \xff utf-8"}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	// a lone surrogate goes out as JSON.stringify writes it, and the worker refuses it as the protocol says
	if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "half \xed\xa0\x80 a pair"}); ErrorCode(err) != CodeInvalidOption || !strings.Contains(err.Error(), "surrogate") {
		t.Fatalf("lone surrogate: %v", err)
	}
	// a context that ends first
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Status(short, s, 0); !errors.Is(err, context.Canceled) || ErrorCode(err) != CodeTimeout {
		t.Fatalf("cancelled context: %v", err)
	}
}

func TestCommandsRefusedForOtherUsers(t *testing.T) {
	w := getWorld(t)
	ctx := context.Background()
	s := newSession(t)
	w.admit(t, s, "so that the session exists")
	for _, user := range []string{"observer", "worker", "admin", "commands"} {
		t.Run(user, func(t *testing.T) {
			c := w.connect(t, user)
			started := time.Now()
			_, err := c.Admit(ctx, s, AdmitRequest{Prompt: "not allowed"})
			var ce *CommandError
			if !errors.As(err, &ce) || ce.Code != CodePermissionDenied || !strings.Contains(ce.Message, user) {
				t.Fatalf("admit as %s: %v", user, err)
			}
			if _, err := c.Status(ctx, s, 0); ErrorCode(err) != CodePermissionDenied {
				t.Fatalf("status as %s: %v", user, err)
			}
			if _, err := c.Cancel(ctx, s, CancelRequest{ExecutionID: "exe_x"}); ErrorCode(err) != CodePermissionDenied {
				t.Fatalf("cancel as %s: %v", user, err)
			}
			if _, err := c.Approve(ctx, s, "call_x", ""); ErrorCode(err) != CodePermissionDenied {
				t.Fatalf("approve as %s: %v", user, err)
			}
			if _, err := c.Tag(ctx, s, TagRequest{Set: Tags{"k": "v"}}); ErrorCode(err) != CodePermissionDenied {
				t.Fatalf("tag as %s: %v", user, err)
			}
			if _, err := c.List(ctx, ListFilter{}); ErrorCode(err) != CodePermissionDenied {
				t.Fatalf("list as %s: %v", user, err)
			}
			if time.Since(started) > 2*time.Second {
				t.Fatalf("the refusals took %v: they should not wait for a timeout", time.Since(started))
			}
		})
	}
}

func TestObserverSubscribesAndReplays(t *testing.T) {
	w := getWorld(t)
	obs := w.connect(t, "observer")
	client := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)
	col := &collector{}
	sub, err := obs.Subscribe(ctx, s, 0, col.handle, col.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	w.admit(t, s, "watched by an observer")
	want := quiet(t, w, client, s, 15*time.Second)
	sameAsStream(t, delivered(t, col, want), want, false)
	if !col.has(isType("text.delta")) {
		t.Fatal("no live-only text.delta was delivered")
	}
	events, err := obs.Replay(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	sameAsStream(t, events, want, true)
	// a user that may not subscribe is refused at once
	cmds := w.connect(t, "commands")
	if _, err := cmds.Subscribe(ctx, s, 0, func(Event) {}); ErrorCode(err) != CodePermissionDenied {
		t.Fatalf("subscribe as commands: %v", err)
	}
	if _, err := cmds.Replay(ctx, s); ErrorCode(err) != CodePermissionDenied {
		t.Fatalf("replay as commands: %v", err)
	}
}

func TestReplayEqualsStream(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s1, s2 := newSession(t), newSession(t)
	w.admit(t, s1, "one two three")
	w.admit(t, s2, "four five six")
	w.admit(t, s1, "seven eight nine")
	want1 := quiet(t, w, c, s1, 15*time.Second)
	want2 := quiet(t, w, c, s2, 15*time.Second)
	got1, err := c.Replay(ctx, s1)
	if err != nil {
		t.Fatal(err)
	}
	sameAsStream(t, got1, want1, true)
	// after a seq, and from a position
	after, err := c.Replay(ctx, s1, AfterSeq(5))
	if err != nil {
		t.Fatal(err)
	}
	sameAsStream(t, after, want1[5:], true)
	pos := uint64(mustNumber(get(want1[len(want1)-1], "position")))
	if tail, err := c.Replay(ctx, s1, AfterPosition(pos)); err != nil || len(tail) != 0 {
		t.Fatalf("after the last position: %v %v", tail, err)
	}
	// every session, in commit order: each session's events in order within it
	all, err := c.ReplayAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bySession := map[string][]Event{}
	var last uint64
	for _, e := range all {
		if e.Position < last {
			t.Fatalf("ReplayAll out of order at %s (position %d after %d)", e.ID, e.Position, last)
		}
		last = e.Position
		bySession[e.SessionID] = append(bySession[e.SessionID], e)
	}
	sameAsStream(t, bySession[s1], want1, true)
	sameAsStream(t, bySession[s2], want2, true)
	// a session with no events
	if none, err := c.Replay(ctx, "go_empty_"+s1); err != nil || len(none) != 0 {
		t.Fatalf("empty session: %v %v", none, err)
	}
}

// A worker SIGKILLed mid-turn: the live subscription delivers every committed event once and in
// order, the recovery by the next worker included. While no worker runs, commands fail with
// no_worker, and a worker that takes requests without answering gets the same body again.
func TestSubscriptionAcrossWorkerKill(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)
	col := &collector{}
	sub, err := c.Subscribe(ctx, s, 0, col.handle, col.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "an answer long enough to be cut short by a kill"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the turn to start", func() bool { return col.has(isType("step.started")) })
	index := w.workers[0]
	w.do(t, map[string]any{"cmd": "kill_worker", "index": index})

	t.Run("no worker", func(t *testing.T) {
		quick := connectWith(t, w, Options{NoWorkerRetry: 300 * time.Millisecond})
		started := time.Now()
		_, err := quick.Status(ctx, s, 0)
		if ErrorCode(err) != CodeNoWorker || time.Since(started) < 150*time.Millisecond || time.Since(started) > 3*time.Second {
			t.Fatalf("status with no worker: %v after %v", err, time.Since(started))
		}
	})
	t.Run("resends to a worker that does not answer", func(t *testing.T) {
		frozen := newFakeWorker(t, w)
		quick := connectWith(t, w, Options{AttemptTimeout: 150 * time.Millisecond, RequestTimeout: 600 * time.Millisecond})
		_, err := quick.Status(ctx, s, 0)
		if ErrorCode(err) != CodeTimeout || !strings.Contains(err.Error(), "sent 4 times") {
			t.Fatalf("status to a frozen worker: %v", err)
		}
		bodies := frozen.bodies()
		if len(bodies) != 4 || slices.ContainsFunc(bodies, func(b string) bool { return b != bodies[0] }) || bodies[0] != `{"sessionId":"`+s+`"}` {
			t.Fatalf("the frozen worker got %q", bodies)
		}
		// the third attempt is answered: the admission an earlier attempt may have made counts as this call's
		frozen.answerAt(3, `{"ok":true,"receipt":{"sessionId":"`+s+`","inputId":"inp_fake","admittedSeq":9,"created":false,"wake":true}}`)
		receipt, err := quick.Admit(ctx, s, AdmitRequest{Prompt: "resent", ID: "inp_fake"})
		if err != nil || !receipt.Created || receipt.AdmittedSeq != 9 {
			t.Fatalf("admit answered on the third attempt: %+v %v", receipt, err)
		}
		admits := frozen.bodies()[4:]
		if len(admits) != 3 || admits[0] != admits[2] || !strings.Contains(admits[0], `"id":"inp_fake"`) {
			t.Fatalf("the admit attempts: %q", admits)
		}
		frozen.close()
	})

	answer := w.do(t, map[string]any{"cmd": "start_worker"})
	n, _ := answer.Get("index")
	w.workers = append(w.workers[1:], int(n.(int64)))
	want := quiet(t, w, c, s, 30*time.Second)
	if !slices.ContainsFunc(want, func(m Map) bool { return get(m, "type") == "recovery.completed" }) {
		t.Fatalf("no recovery in the stream: was the turn over before the kill? %v", wantSeqs(want))
	}
	sameAsStream(t, delivered(t, col, want), want, false)
	t.Logf("stats %+v", sub.Stats())
}

// nats-server restarted mid-turn: the subscription reconnects and still delivers every committed
// event once and in order.
func TestSubscriptionAcrossNatsRestart(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)
	col := &collector{}
	sub, err := c.Subscribe(ctx, s, 0, col.handle, col.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	w.admit(t, s, "an answer that spans a restart of the server")
	waitFor(t, 10*time.Second, "the turn to start", func() bool { return col.has(isType("step.started")) })
	w.restartNATS(t)
	// a second turn after the restart, admitted by this client (it reconnects on its own)
	admitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	waitFor(t, 20*time.Second, "an admission after the restart", func() bool {
		_, err := c.Admit(admitCtx, s, AdmitRequest{Prompt: "after the restart", ID: "inp_" + s + "_after"})
		return err == nil
	})
	want := quiet(t, w, c, s, 30*time.Second)
	sameAsStream(t, delivered(t, col, want), want, false)
	var types []string
	for _, e := range want {
		types = append(types, str(e, "type"))
	}
	t.Logf("stats %+v; the stream: %v", sub.Stats(), types)
}

// Invalid live messages are skipped and reported; a stored message that is not a valid batch is
// skipped (quarantined) and reported by replay, and the events after it are read.
func TestInvalidMessages(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)
	w.admit(t, s, "a valid turn")
	want := quiet(t, w, c, s, 15*time.Second)
	first := len(want)

	raw, err := nats.Connect(w.url, nats.UserInfo(w.users["worker"].User, w.users["worker"].Pass), nats.CustomInboxPrefix("_INBOX_worker"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()

	col := &collector{}
	sub, err := c.Subscribe(ctx, s, int64(len(want)), col.handle, col.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	live := LiveSubject(s, "execution.started")
	good, _ := EncodeLiveMessage(Event{ID: "evt_go_live", Type: "text.delta", Version: 1, SessionID: s, Time: 1, Payload: &TextDelta{ExecutionID: "exe_x", MessageID: "msg_x", PartID: "prt_x", Delta: "hi"}})
	_ = raw.Publish(live, []byte{0xc1})                               // not msgpack
	_ = raw.Publish(live, good)                                       // a text.delta on another type's subject
	_ = raw.Publish(LiveSubject(s, "text.delta"), []byte{0x91, 0x01}) // an array
	_ = raw.Publish(LiveSubject(s, "text.delta"), good)               // valid
	_ = raw.Flush()
	waitFor(t, 5*time.Second, "three invalid messages and one delta", func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		return len(col.invalid) == 3 && len(col.all) == 1
	})
	for _, i := range col.invalid {
		if i.Err == nil || i.Err.Code != CodeDecodeFailed || !strings.HasPrefix(i.Subject, "sessiond.live."+s+".") {
			t.Fatalf("invalid %+v", i)
		}
	}
	if st := sub.Stats(); st.Invalid != 3 || st.Delivered != 1 {
		t.Fatalf("stats %+v", st)
	}

	// a garbage message in the session's log, then the next turn
	if err := raw.Publish(EventsSubject(s), []byte("not a batch")); err != nil {
		t.Fatal(err)
	}
	_ = raw.Flush()
	w.admit(t, s, "after the garbage")
	want = quiet(t, w, c, s, 15*time.Second)
	var quarantined []Quarantined
	got, err := c.Replay(ctx, s, OnQuarantine(func(q Quarantined) { quarantined = append(quarantined, q) }))
	if err != nil {
		t.Fatal(err)
	}
	sameAsStream(t, got, want, true)
	if len(quarantined) != 1 || quarantined[0].Err.Code != CodeDecodeFailed || quarantined[0].Subject != EventsSubject(s) {
		t.Fatalf("quarantined %+v", quarantined)
	}
	// the live subscription saw the second turn whole
	sameAsStream(t, delivered(t, col, want[first:]), want[first:], false)
}

// connectWith is a client of the world as the client user with these options.
func connectWith(t *testing.T, w *world, o Options) *Client {
	t.Helper()
	o.URL, o.User, o.Pass, o.Logf = w.url, w.users["client"].User, w.users["client"].Pass, t.Logf
	c, err := Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fakeWorker takes command requests in the workers' queue group as the commands user, as a
// frozen worker would: it answers none, or only the attempt it is told to.
type fakeWorker struct {
	nc     *nats.Conn
	mu     sync.Mutex
	got    []string
	answer map[int]string // attempt number (counted from answerAt) -> reply
	base   int
}

func newFakeWorker(t *testing.T, w *world) *fakeWorker {
	t.Helper()
	nc, err := nats.Connect(w.url, nats.UserInfo(w.users["commands"].User, w.users["commands"].Pass), nats.CustomInboxPrefix("_INBOX_commands"))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeWorker{nc: nc, answer: map[int]string{}}
	_, err = nc.QueueSubscribe("sessiond.cmd.>", "sessiond-workers", func(m *nats.Msg) {
		f.mu.Lock()
		f.got = append(f.got, string(m.Data))
		reply, ok := f.answer[len(f.got)-f.base]
		f.mu.Unlock()
		if ok {
			_ = m.Respond([]byte(reply))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f
}

func (f *fakeWorker) answerAt(attempt int, reply string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.base = len(f.got)
	f.answer = map[int]string{attempt: reply}
}

func (f *fakeWorker) bodies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

func (f *fakeWorker) close() { f.nc.Close() }

// Gaps and repeats in the live feed (here made on purpose: the stored events of a finished turn
// published live again, as the worker user, with some left out and some twice): each committed
// event is delivered once, in order, the missing ones read from the stream before the event that
// revealed the gap.
func TestGapFillAndRepeats(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)
	w.admit(t, s, "a turn to publish again")
	want := quiet(t, w, c, s, 15*time.Second)
	stored, err := c.Replay(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	n := len(stored)
	if n < 10 {
		t.Fatalf("only %d events", n)
	}
	raw, err := nats.Connect(w.url, nats.UserInfo(w.users["worker"].User, w.users["worker"].Pass), nats.CustomInboxPrefix("_INBOX_worker"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	publish := func(seqs ...int) {
		for _, seq := range seqs {
			e := stored[seq-1]
			e.CommittedAt = 0
			data, err := EncodeLiveMessage(e)
			if err != nil {
				t.Fatal(err)
			}
			if err := raw.Publish(LiveSubject(s, e.Type), data); err != nil {
				t.Fatal(err)
			}
		}
		_ = raw.Flush()
	}

	whole := &collector{}
	sub, err := c.Subscribe(ctx, s, 0, whole.handle, whole.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	fromNow := &collector{}
	sub2, err := c.Subscribe(ctx, s, FromNow, fromNow.handle, fromNow.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub2.Close()

	publish(5, 2, 6, 6, 3, n)
	sameAsStream(t, delivered(t, whole, want), want, false)
	if st := sub.Stats(); st.Duplicates != 3 || st.Backfilled != int64(n-3) {
		t.Fatalf("stats %+v: want 3 repeats dropped (2, 6, 3) and %d events read from the stream", st, n-3)
	}
	// from now: the first live event is the start, the jumps after it are filled
	sameAsStream(t, delivered(t, fromNow, want[4:]), want[4:], false)
	if got := sub2.LastSeq(); got != int64(n) {
		t.Fatalf("LastSeq %d, want %d", got, n)
	}

	// catching up: the stream first, with no live message at all
	caught := &collector{}
	sub3, err := c.Subscribe(ctx, s, 3, caught.handle, append(caught.options(), CatchUp())...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub3.Close()
	sameAsStream(t, delivered(t, caught, want[3:]), want[3:], false)
	publish(n) // a repeat now
	waitFor(t, 5*time.Second, "the repeat to be dropped", func() bool { return sub3.Stats().Duplicates == 1 })
	if len(caught.committed()) != n-3 {
		t.Fatalf("%d events after the repeat", len(caught.committed()))
	}
}
