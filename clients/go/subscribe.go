package sessiond

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// FromNow as Subscribe's afterSeq delivers committed events from the first live one on (without
// filling what came before it), as the Node client's subscribe does without afterSeq.
const FromNow int64 = -1

// InvalidMessage is a live message that failed to decode or validate: it was skipped.
type InvalidMessage struct {
	Subject string
	// Seq is the event's seq when the message was readable that far (0 otherwise).
	Seq int64
	Err *DecodeError
}

// SubscribeOption changes what a subscription does.
type SubscribeOption func(*subscribeOptions)

type subscribeOptions struct {
	onInvalid func(InvalidMessage)
	onError   func(error)
	catchUp   bool
	decode    []DecodeOption
}

// OnInvalid is called for each live message skipped as invalid (default: one line through Logf).
func OnInvalid(fn func(InvalidMessage)) SubscribeOption {
	return func(o *subscribeOptions) { o.onInvalid = fn }
}

// OnError is called when events that were missed could not be read from the stream, or the
// server ended the subscription (default: one line through Logf). Delivery goes on.
func OnError(fn func(error)) SubscribeOption { return func(o *subscribeOptions) { o.onError = fn } }

// CatchUp reads the session's events after afterSeq from the stream once, right after the
// subscription is registered, and delivers them before the live ones (a quiet session produces no
// live event that would bring them): the stream first, then live, each event once.
func CatchUp() SubscribeOption { return func(o *subscribeOptions) { o.catchUp = true } }

// SubscribeDecodeOptions decodes live messages (and gap fills) with these options (e.g. KeepUnknown()).
func SubscribeDecodeOptions(opts ...DecodeOption) SubscribeOption {
	return func(o *subscribeOptions) { o.decode = append(o.decode, opts...) }
}

// SubscriptionStats counts what a subscription did.
type SubscriptionStats struct {
	Delivered  int64 // events handed to the handler (live-only ones included)
	Invalid    int64 // live messages skipped as invalid
	Duplicates int64 // committed events dropped as repeats
	Backfilled int64 // committed events read from the stream (gaps, catch-up)
}

// Subscription is a live subscription to one session (Subscribe).
type Subscription struct {
	c           *Client
	subject     string
	sessionID   string
	handler     func(Event)
	o           subscribeOptions
	sub         *nats.Subscription
	msgs        chan *nats.Msg
	reconnected chan struct{}
	ctx         context.Context
	cancel      context.CancelFunc
	done        chan struct{}
	refused     chan error

	mu    sync.Mutex
	stats SubscriptionStats
	last  int64 // seq of the last committed event delivered (when known)
	known bool
	pos   uint64 // its stream position (0 when unknown)
	err   error
}

// Subscribe delivers the session's live events (sessiond.live.<session>.>) to handler, one at a
// time in one goroutine: each committed event once and in order, dropping repeats (a seq at or
// below the last delivered) and filling gaps from the stream (an ordered consumer from the
// position after the last delivered event) before the event that revealed the gap; live-only
// events (text.delta...) as they come. afterSeq: events up to it count as delivered, so the
// first live event brings everything after it (0: the whole session; FromNow: from the first
// live event on). Invalid messages go to OnInvalid and are skipped. After a reconnect the stream
// is read for what was committed meanwhile. It returns once the server has registered the
// subscription, or refused it (permission_denied). The subscription ends with Close or when ctx
// is done. A client acting as a tenant (Options.Tenant) listens on the tenant's copy,
// sessiond.t.<tenant>.live.<session>.>, and fills gaps through the events command instead.
func (c *Client) Subscribe(ctx context.Context, sessionID string, afterSeq int64, handler func(Event), opts ...SubscribeOption) (*Subscription, error) {
	if c.isClosed() {
		return nil, &CommandError{Verb: "subscribe", Code: CodeLogClosed, Message: "This sessiond client is closed: connect a new one."}
	}
	if p := idProblem(sessionID); p != "" {
		return nil, &CommandError{Verb: "subscribe", Code: CodeInvalidID, Message: invalidIDMessage("session id", sessionID)}
	}
	if afterSeq < FromNow {
		return nil, &CommandError{Verb: "subscribe", Code: CodeInvalidOption, Message: fmt.Sprintf("afterSeq %d: use a seq >= 0, or FromNow.", afterSeq)}
	}
	s := &Subscription{
		c:           c,
		subject:     c.liveSubject(sessionID),
		sessionID:   sessionID,
		handler:     handler,
		msgs:        make(chan *nats.Msg, 1<<16),
		reconnected: make(chan struct{}, 1),
		done:        make(chan struct{}),
	}
	for _, f := range opts {
		f(&s.o)
	}
	if s.o.catchUp && afterSeq == FromNow {
		return nil, &CommandError{Verb: "subscribe", Code: CodeInvalidOption, Message: "CatchUp needs afterSeq >= 0 (the seq after which to read the stream), not FromNow."}
	}
	if afterSeq >= 0 {
		s.last, s.known = afterSeq, true
	}
	if s.o.onInvalid == nil {
		s.o.onInvalid = func(i InvalidMessage) { c.logf("skipped a live message on %s: %s", i.Subject, i.Err.Message) }
	}
	if s.o.onError == nil {
		s.o.onError = func(err error) { c.logf("live subscription on %s: %v", s.subject, err) }
	}
	s.ctx, s.cancel = context.WithCancel(ctx)

	perm, unwatch := c.watchPermissions("", s.subject)
	before := c.nc.LastError()
	sub, err := c.nc.ChanSubscribe(s.subject, s.msgs)
	if err != nil {
		unwatch()
		s.cancel()
		return nil, &CommandError{Verb: "subscribe", Code: CodeLogClosed, Err: err, Message: fmt.Sprintf("Could not subscribe to %s: %v.", s.subject, err)}
	}
	_ = sub.SetPendingLimits(-1, -1) // the channel's size bounds what is held
	s.sub = sub
	// the server answers a refused SUB before this PING's PONG (nc.LastError is set on the way)
	flushCtx, cancelFlush := context.WithTimeout(s.ctx, 10*time.Second)
	err = c.nc.FlushWithContext(flushCtx)
	cancelFlush()
	if err != nil {
		unwatch()
		_ = sub.Unsubscribe()
		s.cancel()
		return nil, &CommandError{Verb: "subscribe", Code: CodeTimeout, Err: err, Message: fmt.Sprintf("The server did not confirm the subscription to %s (%v): check the connection and subscribe again.", s.subject, err)}
	}
	if last := c.nc.LastError(); last != nil && last != before && errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), `"`+s.subject+`"`) {
		unwatch()
		_ = sub.Unsubscribe()
		s.cancel()
		return nil, s.refusedError(last)
	}
	c.mu.Lock()
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	go func() {
		defer unwatch()
		s.run(perm.ch)
	}()
	return s, nil
}

// liveSubject is what Subscribe listens on: sessiond.live.<session>.>, or the tenant's copy
// sessiond.t.<tenant>.live.<session>.>.
func (c *Client) liveSubject(sessionID string) string {
	if c.tenant != "" {
		return TenantPrefix + "." + c.tenant + ".live." + sessionID + ".>"
	}
	return LivePrefix + "." + sessionID + ".>"
}

func (s *Subscription) refusedError(err error) error {
	who := s.c.user
	if who == "" {
		who = "(this connection's user)"
	}
	if t := s.c.tenant; t != "" {
		return &CommandError{Verb: "subscribe", Code: CodePermissionDenied, Err: err,
			Message: fmt.Sprintf("NATS user %s may not subscribe to %s (%v): a tenant's user reads its live events when made with the read scope (sessiond setup --tenant %s), whose block allows sessiond.t.%s.live.>.", who, s.subject, err, t, t)}
	}
	return &CommandError{Verb: "subscribe", Code: CodePermissionDenied, Err: err,
		Message: fmt.Sprintf("NATS user %s may not subscribe to %s (%v): nats.conf lets the client and observer users subscribe to sessiond.live.>.", who, s.subject, err)}
}

// Subject is the NATS subject subscribed to (sessiond.live.<session>.>, or
// sessiond.t.<tenant>.live.<session>.> for a client acting as a tenant).
func (s *Subscription) Subject() string { return s.subject }

// LastSeq is the seq of the last committed event delivered (afterSeq before the first; -1 while
// unknown with FromNow).
func (s *Subscription) LastSeq() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.known {
		return FromNow
	}
	return s.last
}

// Stats counts what the subscription did so far.
func (s *Subscription) Stats() SubscriptionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Done is closed when the subscription has ended (Close, ctx done, or the server ended it).
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is why the subscription ended, when the server ended it (nil after Close or ctx).
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription and waits until the handler has returned for the last time.
func (s *Subscription) Close() error {
	s.cancel()
	<-s.done
	return nil
}

func (s *Subscription) run(refused <-chan error) {
	defer close(s.done)
	defer func() {
		_ = s.sub.Unsubscribe()
		s.c.mu.Lock()
		delete(s.c.subs, s)
		s.c.mu.Unlock()
	}()
	if s.o.catchUp {
		s.fill(math.MaxInt64)
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case err := <-refused:
			err = s.refusedError(err)
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			s.o.onError(err)
			return
		case <-s.reconnected:
			// what was committed while the connection was down produced no live message we got
			if s.known {
				s.fill(math.MaxInt64)
			}
		case msg := <-s.msgs:
			s.handle(msg)
		}
		if !s.sub.IsValid() && s.ctx.Err() == nil {
			s.mu.Lock()
			s.err = &CommandError{Verb: "subscribe", Code: CodeLogClosed, Message: fmt.Sprintf("The subscription to %s ended: the NATS connection closed.", s.subject)}
			s.mu.Unlock()
			return
		}
	}
}

func (s *Subscription) handle(msg *nats.Msg) {
	e, err := decodeLive(msg.Data, msg.Subject, s.c.tenant, s.o.decode)
	if err != nil {
		var derr *DecodeError
		errors.As(err, &derr)
		s.mu.Lock()
		s.stats.Invalid++
		s.mu.Unlock()
		s.o.onInvalid(InvalidMessage{Subject: msg.Subject, Seq: derr.Seq, Err: derr})
		return
	}
	if e.Seq == 0 { // live only: as it comes
		s.deliver(e, false)
		return
	}
	s.mu.Lock()
	known, last := s.known, s.last
	if known && e.Seq <= last {
		s.stats.Duplicates++
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	if known && e.Seq > last+1 {
		s.fill(e.Seq)
	}
	s.mu.Lock()
	if s.known && e.Seq <= s.last { // the fill delivered it (it was stored meanwhile)
		s.stats.Duplicates++
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.deliver(e, false)
}

// fill delivers the committed events after the last delivered and below seq `before`, read from
// the stream (from the position after the last delivered event, when known).
func (s *Subscription) fill(before int64) {
	s.mu.Lock()
	last, from := s.last, s.pos+1
	s.mu.Unlock()
	if s.c.tenant != "" {
		s.fillTenant(last, before)
		return
	}
	err := s.c.readStream(s.ctx, from, EventsSubject(s.sessionID), func(m storedMessage) (bool, error) {
		if m.err != nil {
			s.c.logf("skipped (quarantined) stream message %d on %s: %s", m.position, m.subject, m.err.Message)
			return true, nil
		}
		for _, e := range m.events {
			if e.Seq >= before {
				return false, nil
			}
			s.mu.Lock()
			skip := e.Seq <= s.last
			s.mu.Unlock()
			if !skip {
				s.deliver(e, true)
			}
		}
		return true, nil
	}, s.o.decode)
	if err != nil && s.ctx.Err() == nil {
		what := fmt.Sprintf("Live events %d..%d of session %s were missed", last+1, before-1, s.sessionID)
		if before == math.MaxInt64 {
			what = fmt.Sprintf("The events of session %s after seq %d", s.sessionID, last)
		}
		s.o.onError(&CommandError{Verb: "subscribe", Code: CodeLogClosed, Err: err,
			Message: fmt.Sprintf("%s and could not be read from the stream (%v); read them with Replay(ctx, %q, AfterSeq(%d)).", what, err, s.sessionID, last)})
	}
}

// fillTenant is fill for a tenant's user (no JetStream): the events after last, read through the
// workers (Events).
func (s *Subscription) fillTenant(last, before int64) {
	events, err := s.c.Events(s.ctx, s.sessionID, EventsOptions{AfterSeq: last, Decode: s.o.decode})
	var cerr *CommandError
	if err != nil && errors.As(err, &cerr) && (cerr.Code == CodeUnknownSession || cerr.Code == "not_found") {
		err = nil // no events yet
	}
	for _, e := range events {
		if e.Seq >= before {
			break
		}
		s.mu.Lock()
		skip := e.Seq <= s.last
		s.mu.Unlock()
		if !skip {
			s.deliver(e, true)
		}
	}
	if err != nil && s.ctx.Err() == nil {
		what := fmt.Sprintf("Live events %d..%d of session %s were missed", last+1, before-1, s.sessionID)
		if before == math.MaxInt64 {
			what = fmt.Sprintf("The events of session %s after seq %d", s.sessionID, last)
		}
		s.o.onError(&CommandError{Verb: "subscribe", Code: CodeLogClosed, Err: err,
			Message: fmt.Sprintf("%s and could not be read with the events command (%v); read them with Events(ctx, %q, EventsOptions{AfterSeq: %d}).", what, err, s.sessionID, last)})
	}
}

func (s *Subscription) deliver(e Event, backfilled bool) {
	if s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	if e.Seq != 0 {
		s.last, s.known = e.Seq, true
		if e.Position != 0 {
			s.pos = e.Position
		}
	}
	s.stats.Delivered++
	if backfilled {
		s.stats.Backfilled++
	}
	s.mu.Unlock()
	s.handler(e)
}
