package sessiond

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Quarantined is a stream message a reader skipped because it is not a valid event batch (only a
// misbehaving writer can store one): readers report it and go on.
type Quarantined struct {
	Subject  string
	Position uint64
	Err      *DecodeError
}

// ReplayOption changes what a replay reads.
type ReplayOption func(*replayOptions)

type replayOptions struct {
	afterSeq      int64
	afterPosition uint64
	onQuarantine  func(Quarantined)
	decode        []DecodeOption
}

// AfterSeq replays only the events with a session seq above n (with one session).
func AfterSeq(n int64) ReplayOption { return func(o *replayOptions) { o.afterSeq = n } }

// AfterPosition replays only the messages with a stream sequence above p.
func AfterPosition(p uint64) ReplayOption { return func(o *replayOptions) { o.afterPosition = p } }

// OnQuarantine is called for each message skipped as invalid (default: one line through Logf).
func OnQuarantine(fn func(Quarantined)) ReplayOption {
	return func(o *replayOptions) { o.onQuarantine = fn }
}

// WithDecodeOptions decodes the stored messages with these options (e.g. KeepUnknown()).
func WithDecodeOptions(opts ...DecodeOption) ReplayOption {
	return func(o *replayOptions) { o.decode = append(o.decode, opts...) }
}

// How long a read waits for the next message before it starts a new consumer from where it was,
// and how long it goes on without progress before it fails with log_closed.
const (
	readStallTimeout = 5 * time.Second
	readGiveUpAfter  = 30 * time.Second
)

// Replay is every committed event of the session in the stream, in order (an ordered consumer
// filtered on sessiond.events.<session>, read until none is pending).
func (c *Client) Replay(ctx context.Context, sessionID string, opts ...ReplayOption) ([]Event, error) {
	if p := idProblem(sessionID); p != "" {
		return nil, &CommandError{Verb: "replay", Code: CodeInvalidID, Message: invalidIDMessage("session id", sessionID)}
	}
	var out []Event
	err := c.ReplayEach(ctx, sessionID, func(e Event) error { out = append(out, e); return nil }, opts...)
	return out, err
}

// ReplayAll is every committed event of every session, in commit order.
func (c *Client) ReplayAll(ctx context.Context, opts ...ReplayOption) ([]Event, error) {
	var out []Event
	err := c.ReplayEach(ctx, "", func(e Event) error { out = append(out, e); return nil }, opts...)
	return out, err
}

// ReplayEach calls fn with each committed event of the session (every session when sessionID
// is ""), in order, until the stream has none pending; an error from fn stops the read and is
// returned.
func (c *Client) ReplayEach(ctx context.Context, sessionID string, fn func(Event) error, opts ...ReplayOption) error {
	var o replayOptions
	for _, f := range opts {
		f(&o)
	}
	if o.onQuarantine == nil {
		o.onQuarantine = func(q Quarantined) {
			c.logf("skipped (quarantined) stream message %d on %s: %s", q.Position, q.Subject, q.Err.Message)
		}
	}
	filter := ""
	if sessionID != "" {
		if p := idProblem(sessionID); p != "" {
			return &CommandError{Verb: "replay", Code: CodeInvalidID, Message: invalidIDMessage("session id", sessionID)}
		}
		filter = EventsSubject(sessionID)
	}
	if c.tenant != "" {
		if sessionID == "" {
			return c.notAsTenant("replay", "replay the whole log (name a session: Replay(ctx, sessionID))")
		}
		return c.replayTenant(ctx, sessionID, fn, o)
	}
	return c.readStream(ctx, o.afterPosition+1, filter, func(m storedMessage) (bool, error) {
		if m.err != nil {
			o.onQuarantine(Quarantined{Subject: m.subject, Position: m.position, Err: m.err})
			return true, nil
		}
		for _, e := range m.events {
			if e.Seq <= o.afterSeq {
				continue
			}
			if err := fn(e); err != nil {
				return false, err
			}
		}
		return true, nil
	}, o.decode)
}

// replayTenant reads one session through the workers (Events), as a tenant's user must: an
// unknown session (or another owner's) is no events, as in the stream.
func (c *Client) replayTenant(ctx context.Context, sessionID string, fn func(Event) error, o replayOptions) error {
	events, err := c.Events(ctx, sessionID, EventsOptions{AfterSeq: max(o.afterSeq, 0), Decode: o.decode})
	if err != nil {
		var cerr *CommandError
		if errors.As(err, &cerr) && (cerr.Code == CodeUnknownSession || cerr.Code == "not_found") {
			return nil
		}
		return err
	}
	for _, e := range events {
		if e.Position != 0 && e.Position <= o.afterPosition {
			continue
		}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// notAsTenant refuses what a tenant's user cannot do: it has no JetStream.
func (c *Client) notAsTenant(verb, what string) error {
	return &CommandError{Verb: verb, Code: CodePermissionDenied,
		Message: fmt.Sprintf("A client acting as tenant %s cannot %s: a tenant's NATS user has no JetStream (the stream holds every tenant's sessions). It reads its own sessions with Events, Replay(ctx, sessionID) and Subscribe (docs/nats.md, \"Tenants\").", c.tenant, what)}
}

// storedMessage is one stream message, decoded (err set when it was quarantined).
type storedMessage struct {
	subject  string
	position uint64
	events   []Event
	err      *DecodeError
}

// readStream reads the stream from stream sequence start (filtered on filter when not empty)
// through an ordered consumer until none is pending, calling visit for each message until it
// says stop. A consumer that delivers nothing for readStallTimeout is replaced by a new one from
// the next message; readGiveUpAfter without progress fails the read with log_closed.
func (c *Client) readStream(ctx context.Context, start uint64, filter string, visit func(storedMessage) (bool, error), decode []DecodeOption) error {
	if c.isClosed() {
		return &CommandError{Verb: "replay", Code: CodeLogClosed, Message: "This sessiond client is closed: connect a new one."}
	}
	from := max(start, 1)
	progressAt := time.Now()
	var lastErr error
	for {
		if time.Since(progressAt) > readGiveUpAfter {
			return &CommandError{Verb: "replay", Code: CodeLogClosed, Err: lastErr,
				Message: fmt.Sprintf("Reading stream %s stalled: nothing arrived for %v though the stream has more (last: %v; consumers were started again from stream sequence %d). Check that nats-server is reachable, then retry the read.", c.stream, readGiveUpAfter, lastErr, from)}
		}
		done, next, err := c.readOnce(ctx, from, filter, visit, decode)
		if done || err != nil {
			return err
		}
		if next > from {
			progressAt = time.Now()
			from = next
		}
		lastErr = fmt.Errorf("stalled at stream sequence %d", from)
		if ctx.Err() != nil {
			return contextError("replay", filter, ctx.Err())
		}
		if c.isClosed() || c.nc.IsClosed() {
			return &CommandError{Verb: "replay", Code: CodeLogClosed, Message: "The NATS connection closed during the read: connect a new client and read again."}
		}
	}
}

// readOnce is one ordered consumer's read: done when the stream has nothing more pending (or
// visit said stop); next is the stream sequence to go on from otherwise.
func (c *Client) readOnce(ctx context.Context, from uint64, filter string, visit func(storedMessage) (bool, error), decode []DecodeOption) (done bool, next uint64, err error) {
	next = from
	cfg := jetstream.OrderedConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		InactiveThreshold: 30 * time.Second,
		MaxResetAttempts:  5,
	}
	if filter != "" {
		cfg.FilterSubjects = []string{filter}
	}
	createCtx, cancel := context.WithTimeout(ctx, readStallTimeout)
	perm, unwatch := c.watchPermissions("$JS.API.", "")
	refused := make(chan error, 1)
	go func() {
		select {
		case err := <-perm.ch:
			refused <- err
			cancel()
		case <-createCtx.Done():
		}
	}()
	cons, err := c.js.OrderedConsumer(createCtx, c.stream, cfg)
	cancel()
	unwatch()
	if err != nil {
		select {
		case perr := <-refused:
			return false, next, &CommandError{Verb: "replay", Code: CodePermissionDenied, Err: perr,
				Message: fmt.Sprintf("NATS user %s may not read stream %s with a consumer: nats.conf refuses %s. Connect as the client or observer user.", c.user, c.stream, violationSubject(perr))}
		default:
		}
		if ctx.Err() != nil {
			return false, next, contextError("replay", filter, ctx.Err())
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return false, next, &CommandError{Verb: "replay", Code: "not_found", Err: err,
				Message: fmt.Sprintf("JetStream stream %s does not exist: run `sessiond setup --nats <url> --nats-user admin` once as the operator.", c.stream)}
		}
		pause(ctx, 200*time.Millisecond) // the server may be restarting: try again
		return false, next, nil
	}
	info := cons.CachedInfo()
	defer func() {
		if info != nil {
			name := info.Name
			go func() { // ordered consumers are ephemeral; delete ours now rather than when idle
				dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = c.js.DeleteConsumer(dctx, c.stream, name)
			}()
		}
	}()
	if info != nil && info.NumPending == 0 {
		return true, next, nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		pause(ctx, 200*time.Millisecond)
		return false, next, nil
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for {
		msg, err := it.Next(jetstream.NextMaxWait(readStallTimeout))
		if err != nil {
			if ctx.Err() != nil {
				return false, next, contextError("replay", filter, ctx.Err())
			}
			return false, next, nil // stalled, reconnected or reset: a new consumer from next
		}
		md, err := msg.Metadata()
		if err != nil {
			return false, next, nil
		}
		next = md.Sequence.Stream + 1
		m := storedMessage{subject: msg.Subject(), position: md.Sequence.Stream}
		events, derr := DecodeStoredMessage(msg.Data(), m.subject, m.position, md.Timestamp.UnixMilli(), decode...)
		if derr != nil {
			m.err = derr.(*DecodeError)
		}
		m.events = events
		goOn, err := visit(m)
		if err != nil || !goOn {
			return true, next, err
		}
		if md.NumPending == 0 {
			return true, next, nil
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
