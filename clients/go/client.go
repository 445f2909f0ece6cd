// Package sessiond is the Go client of sessiond's NATS protocol (docs/protocol.md): commands to
// the workers (admit, wake, cancel, status, drop, tag, list, fork, events, and resolve: Approve,
// Deny, Resolve) with the Node client's resend rules, live events with each session's committed events
// delivered once and in order (gaps filled from the stream), replay of the durable log with
// ordered consumers, and the event codec (stored batches, live messages, export files) with typed
// payloads for every catalog type.
//
//	c, err := sessiond.Connect(ctx, sessiond.Options{URL: "nats://127.0.0.1:4222", User: "client", Pass: "client-dev-secret"})
//	sub, err := c.Subscribe(ctx, "ses_1", 0, func(e sessiond.Event) { fmt.Println(e.Seq, e.Type) })
//	receipt, err := c.Admit(ctx, "ses_1", sessiond.AdmitRequest{Prompt: "hello"})
//	events, err := c.Replay(ctx, "ses_1")
//	sub.Close(); c.Close()
package sessiond

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of the command protocol (the Node client's).
const (
	DefaultRequestTimeout = 10 * time.Second
	DefaultAttemptTimeout = 2 * time.Second
	DefaultNoWorkerRetry  = 3 * time.Second
)

// Options to Connect.
type Options struct {
	// URL of the NATS server; several may be given comma-separated (or in URLs).
	URL  string
	URLs []string
	// User and Pass: the NATS user (nats.conf: client, or observer for read-only use). The
	// connection's inbox prefix is _INBOX_<User>, as the protocol requires.
	User string
	Pass string
	// Name of the connection as the server shows it (default "sessiond-go-client").
	Name string
	// RequestTimeout: how long a command waits for a reply over all its attempts (default 10 s).
	RequestTimeout time.Duration
	// AttemptTimeout: how long one attempt waits before the same body is sent again (default 2 s,
	// at most RequestTimeout).
	AttemptTimeout time.Duration
	// NoWorkerRetry: how long a command is sent again while no worker serves its subject (default
	// 3 s; a negative value fails at once).
	NoWorkerRetry time.Duration
	// Stream is the events stream (default SESSIOND_EVENTS).
	Stream string
	// NATSOptions are passed to nats.Connect first (an ErrorHandler, ReconnectHandler or
	// DisconnectErrHandler given here is still called).
	NATSOptions []nats.Option
	// Tenant makes the client act as this tenant (a NATS user made by `sessiond setup --tenant
	// NAME`: 1-64 letters, digits, _ or -): commands go to sessiond.t.<tenant>.cmd.<verb> and the
	// worker keeps them to the tenant's own sessions (and those with no owner); replies come to
	// _INBOX_t.<tenant> (the inbox prefix, instead of _INBOX_<User>); Subscribe reads
	// sessiond.t.<tenant>.live.<session>.> and fills gaps with Events; Replay of one session reads
	// through Events (a tenant's user has no JetStream), and ReplayAll is refused
	// (permission_denied). Empty: a trusted user (sessiond.cmd.<verb>, the stream).
	Tenant string
	// Logf reports what no callback was given for (quarantined messages, invalid live messages,
	// unreadable gaps): default one line on stderr.
	Logf func(format string, args ...any)
}

// Client is a connection to sessiond over NATS. It is safe for concurrent use.
type Client struct {
	nc             *nats.Conn
	js             jetstream.JetStream
	user           string
	tenant         string
	stream         string
	requestTimeout time.Duration
	attemptTimeout time.Duration
	noWorkerRetry  time.Duration
	logf           func(format string, args ...any)

	mu          sync.Mutex
	subs        map[*Subscription]struct{}
	permWaiters map[*permWaiter]struct{}
	closed      bool
}

// Connect opens a NATS connection for sessiond (inbox prefix _INBOX_<user>, reconnecting for ever)
// and returns the client. The context bounds the connection attempt.
func Connect(ctx context.Context, o Options) (*Client, error) {
	servers := o.URLs
	if o.URL != "" {
		for _, u := range strings.Split(o.URL, ",") {
			if u = strings.TrimSpace(u); u != "" {
				servers = append(servers, u)
			}
		}
	}
	if len(servers) == 0 {
		return nil, &CommandError{Verb: "connect", Code: CodeInvalidOption, Message: "Options need the NATS server's URL (Options.URL, e.g. nats://127.0.0.1:4222)."}
	}
	if o.Tenant != "" && !tenantNameRe.MatchString(o.Tenant) {
		return nil, &CommandError{Verb: "connect", Code: CodeInvalidOption,
			Message: fmt.Sprintf("Invalid tenant %q: 1-64 letters, digits, _ or - (it becomes a NATS subject token).", o.Tenant)}
	}
	c := &Client{
		user:           o.User,
		tenant:         o.Tenant,
		stream:         o.Stream,
		requestTimeout: o.RequestTimeout,
		attemptTimeout: o.AttemptTimeout,
		noWorkerRetry:  o.NoWorkerRetry,
		logf:           o.Logf,
		subs:           map[*Subscription]struct{}{},
		permWaiters:    map[*permWaiter]struct{}{},
	}
	if c.stream == "" {
		c.stream = StreamName
	}
	if c.requestTimeout <= 0 {
		c.requestTimeout = DefaultRequestTimeout
	}
	if c.attemptTimeout <= 0 {
		c.attemptTimeout = DefaultAttemptTimeout
	}
	c.attemptTimeout = min(c.attemptTimeout, c.requestTimeout)
	if c.noWorkerRetry == 0 {
		c.noWorkerRetry = DefaultNoWorkerRetry
	}
	if c.logf == nil {
		c.logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, "sessiond: "+format+"\n", args...) }
	}
	name := o.Name
	if name == "" {
		name = "sessiond-go-client"
	}

	no := nats.GetDefaultOptions()
	no.Servers = servers
	no.Name = name
	no.MaxReconnect = -1
	no.ReconnectWait = 250 * time.Millisecond
	no.ReconnectJitter = 100 * time.Millisecond
	no.Timeout = 5 * time.Second
	if o.User != "" {
		if err := nats.UserInfo(o.User, o.Pass)(&no); err != nil {
			return nil, err
		}
	}
	if o.Tenant != "" {
		// a tenant's user reads only its tenant's inboxes (sessiond setup --tenant): _INBOX_t.<tenant>
		if err := nats.CustomInboxPrefix(TenantInbox(o.Tenant))(&no); err != nil {
			return nil, &CommandError{Verb: "connect", Code: CodeInvalidOption, Err: err, Message: fmt.Sprintf("Tenant %q cannot be an inbox prefix (%v).", o.Tenant, err)}
		}
	} else if o.User != "" {
		// each user may read only its own inboxes (nats.conf): _INBOX_<user>
		if err := nats.CustomInboxPrefix("_INBOX_" + o.User)(&no); err != nil {
			return nil, &CommandError{Verb: "connect", Code: CodeInvalidOption, Err: err, Message: fmt.Sprintf("User %q cannot be an inbox prefix token (%v): use a NATS user name without '.', '*' or '>'.", o.User, err)}
		}
	}
	for _, opt := range o.NATSOptions {
		if err := opt(&no); err != nil {
			return nil, err
		}
	}
	userErr, userReconnect := no.AsyncErrorCB, no.ReconnectedCB
	no.AsyncErrorCB = func(nc *nats.Conn, sub *nats.Subscription, err error) {
		c.onAsyncError(err)
		if userErr != nil {
			userErr(nc, sub, err)
		}
	}
	no.ReconnectedCB = func(nc *nats.Conn) {
		c.onReconnect()
		if userReconnect != nil {
			userReconnect(nc)
		}
	}

	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := no.Connect()
		done <- result{nc, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, connectError(servers, o.User, r.err)
		}
		c.nc = r.nc
	case <-ctx.Done():
		go func() {
			if r := <-done; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, ctx.Err()
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		c.nc.Close()
		return nil, err
	}
	c.js = js
	return c, nil
}

func connectError(servers []string, user string, err error) error {
	code := "unavailable"
	hint := "check that nats-server is running there and reachable"
	if errors.Is(err, nats.ErrAuthorization) || strings.Contains(strings.ToLower(err.Error()), "authorization") {
		code = CodePermissionDenied
		hint = "check the user and password (nats.conf)"
	}
	return &CommandError{Verb: "connect", Code: code, Err: err,
		Message: fmt.Sprintf("Could not connect to NATS at %s as %q: %v; %s.", strings.Join(servers, ","), user, err, hint)}
}

// tenantNameRe is a tenant's name: a subject token and a user name.
var tenantNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Tenant is the tenant this client acts as (Options.Tenant; "" for a trusted user).
func (c *Client) Tenant() string { return c.tenant }

// Conn is the underlying NATS connection (owned by the client: Close closes it).
func (c *Client) Conn() *nats.Conn { return c.nc }

// JetStream is the client's JetStream context.
func (c *Client) JetStream() jetstream.JetStream { return c.js }

// Close ends every subscription and closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	subs := make([]*Subscription, 0, len(c.subs))
	for s := range c.subs {
		subs = append(subs, s)
	}
	c.mu.Unlock()
	for _, s := range subs {
		_ = s.Close()
	}
	c.nc.Close()
	return nil
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// A permission violation names its subject: `Permissions Violation for Publish to "x"` or
// `... for Subscription to "x"`.
var violationRe = regexp.MustCompile(`(?i)(publish|subscription) to "([^"]+)"`)

type permWaiter struct {
	publish   string // the subjects this waiter publishes to start with this
	subscribe string // a subject this waiter subscribed to
	ch        chan error
}

func (c *Client) watchPermissions(publish, subscribe string) (*permWaiter, func()) {
	w := &permWaiter{publish: publish, subscribe: subscribe, ch: make(chan error, 1)}
	c.mu.Lock()
	c.permWaiters[w] = struct{}{}
	c.mu.Unlock()
	return w, func() {
		c.mu.Lock()
		delete(c.permWaiters, w)
		c.mu.Unlock()
	}
}

func (c *Client) onAsyncError(err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return
	}
	m := violationRe.FindStringSubmatch(err.Error())
	if m == nil {
		return
	}
	publish := strings.EqualFold(m[1], "publish")
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.permWaiters {
		if (publish && w.publish != "" && strings.HasPrefix(m[2], w.publish)) || (!publish && w.subscribe != "" && w.subscribe == m[2]) {
			select {
			case w.ch <- err:
			default:
			}
		}
	}
}

func (c *Client) onReconnect() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := range c.subs {
		select {
		case s.reconnected <- struct{}{}:
		default:
		}
	}
}
