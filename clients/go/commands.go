package sessiond

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
)

// Command error codes: the worker's (in its error reply) and the client's own for requests
// that got no reply (no_worker, timeout, permission_denied).
const (
	CodeBadRequest       = "bad_request"
	CodeInvalidOption    = "invalid_option"
	CodeUnknownSession   = "unknown_session"
	CodeUnknownCommand   = "unknown_command"
	CodeInputConflict    = "input_conflict"
	CodeSessionExists    = "session_exists" // a fork into a session that has events (not the same fork again)
	CodeNotSettled       = "not_settled"    // a fork at a seq inside a turn (details: nearestBefore, nearestAfter)
	CodeLimitExceeded    = "limit_exceeded"
	CodeCommandRefused   = "command_refused"
	CodeSequenceConflict = "sequence_conflict"
	CodeLogClosed        = "log_closed"
	CodeInternal         = "internal"
	CodeNoWorker         = "no_worker"
	CodeTimeout          = "timeout"
	CodePermissionDenied = "permission_denied"
)

// CommandError is a command that failed: the worker's error reply (Code, Message, Details as it
// sent them) or no reply at all (no_worker, timeout, permission_denied), or a request refused
// before it was sent (invalid_id, invalid_option).
type CommandError struct {
	Verb    string
	Code    string
	Message string
	Details map[string]any
	// Err is the cause, when there is one (a NATS error, the context's error).
	Err error
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("sessiond %s: %s: %s", e.Verb, e.Code, e.Message)
}

func (e *CommandError) Unwrap() error { return e.Err }

// ErrorCode is the protocol code of err (a *CommandError's, a *DecodeError's, an
// *ExportError's), or "" for other errors.
func ErrorCode(err error) string {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.Code
	}
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Code
	}
	var xe *ExportError
	if errors.As(err, &xe) {
		return xe.Code
	}
	return ""
}

// The verbs.
const (
	VerbAdmit   = "admit"
	VerbWake    = "wake"
	VerbCancel  = "cancel"
	VerbStatus  = "status"
	VerbDrop    = "drop"
	VerbResolve = "resolve"
	VerbTag     = "tag"
	VerbList    = "list" // the only verb without a session id
	VerbFork    = "fork"
	VerbEvents  = "events" // reads only, as list does
)

// CommandSubject is the subject of a verb: sessiond.cmd.<verb>.
func CommandSubject(verb string) string { return CommandPrefix + "." + verb }

// commandSubject is where this client sends a verb: the tenant's subject in tenant mode.
func (c *Client) commandSubject(verb string) string {
	if c.tenant != "" {
		return TenantCommandSubject(c.tenant, verb)
	}
	return CommandSubject(verb)
}

// AdmitRequest is a prompt to admit: Prompt, a string, or Parts, a list of parts (text, images
// and files by URL or by their bytes, JSON data: TextPart, ImageURL, ImageBytes, FileURL,
// FileBytes, JSONPart), sent as a list when there are any (one or the other, not both; at most
// MaxPromptParts, each checked by the worker, which refuses a part that is not valid with
// invalid_option naming it). ID is the input id: admitting the same id again is a no-op,
// so a resent request is safe; one is generated when empty. Delivery "queue" (the default when
// empty) waits for the next turn, "steer" joins the running one. Wake nil or true wakes a worker.
// NotBefore schedules the prompt: no turn takes it before this time, in ms since the epoch (0:
// none); a worker's recovery sweep wakes the session when it is due. Tags are given to the session
// (merged into those it has; nil or empty: none).
type AdmitRequest struct {
	Prompt    string
	Parts     []PromptPart
	ID        string
	Delivery  string
	Wake      *bool
	NotBefore int64
	Tags      Tags
	// Owner: who admits (a tenant's name); the session's owner when this creates it, and a session
	// another owner holds answers not_found. Trusted users leave it empty.
	Owner string
	// Traceparent: the caller's W3C trace context (00-<trace id>-<span id>-<flags>); the turn that
	// runs the prompt is its child, on whichever worker. A malformed one is ignored, never refused.
	Traceparent string
}

// DropRequest names the pending inputs to drop (none: every pending input of the users) and why.
type DropRequest struct {
	InputIDs []string
	Reason   string
	Actor    string // who drops them, recorded in the event ("" sends none)
}

// ResolveRequest ends a wait of the session's turn: Kind "approval" (Name: the call id, Outcome
// "approved" or "denied", Reason: a person's words on it, which the model sees on a denial) or
// "signal" (Name: the signal's name, Outcome "delivered", Data: its value). Reason "" and an unset
// Data send none. Approve, Deny and Resolve build it.
type ResolveRequest struct {
	Kind    string
	Name    string
	Outcome string
	Reason  string
	Data    Any
	Actor   string // who decides or delivers, recorded in the event ("" sends none)
}

// Request bodies, as the Node client builds them (keys in this order).

// AdmitBody is the admit request's JSON body (what Admit sends): the prompt is r.Parts when it has
// any (each part's keys in the catalog's order), else r.Prompt.
func AdmitBody(sessionID string, r AdmitRequest) Map {
	var prompt any = r.Prompt
	if len(r.Parts) > 0 {
		prompt = partsWire(r.Parts)
	}
	m := Map{{Key: "sessionId", Value: sessionID}, {Key: "prompt", Value: prompt}}
	if r.ID != "" {
		m = append(m, MapEntry{Key: "id", Value: r.ID})
	}
	if r.Delivery != "" {
		m = append(m, MapEntry{Key: "delivery", Value: r.Delivery})
	}
	if r.Wake != nil {
		m = append(m, MapEntry{Key: "wake", Value: *r.Wake})
	}
	if r.NotBefore != 0 {
		m = append(m, MapEntry{Key: "notBefore", Value: r.NotBefore})
	}
	if len(r.Tags) > 0 {
		m = append(m, MapEntry{Key: "tags", Value: tagsMap(r.Tags)})
	}
	if r.Owner != "" {
		m = append(m, MapEntry{Key: "owner", Value: r.Owner})
	}
	if r.Traceparent != "" {
		m = append(m, MapEntry{Key: "traceparent", Value: r.Traceparent})
	}
	return m
}

// CancelRequest is what Cancel takes (every field optional). ExecutionID: the execution to cancel
// ("": the one status shows in progress). Reason: why, recorded in the execution.cancelled event.
// Actor: who cancels, recorded there too; a trusted client passes the person or service it acts
// for. An empty string sends none.
type CancelRequest struct {
	Reason      string
	ExecutionID string
	Actor       string
}

// CancelBody is the cancel request's JSON body (empty strings are left out).
func CancelBody(sessionID string, r CancelRequest) Map {
	m := Map{{Key: "sessionId", Value: sessionID}}
	if r.Reason != "" {
		m = append(m, MapEntry{Key: "reason", Value: r.Reason})
	}
	if r.ExecutionID != "" {
		m = append(m, MapEntry{Key: "executionId", Value: r.ExecutionID})
	}
	if r.Actor != "" {
		m = append(m, MapEntry{Key: "actor", Value: r.Actor})
	}
	return m
}

// StatusBody is the status request's JSON body (pendingFrom left out when 0).
func StatusBody(sessionID string, pendingFrom int64) Map {
	m := Map{{Key: "sessionId", Value: sessionID}}
	if pendingFrom != 0 {
		m = append(m, MapEntry{Key: "pendingFrom", Value: pendingFrom})
	}
	return m
}

// DropBody is the drop request's JSON body.
func DropBody(sessionID string, r DropRequest) Map {
	m := Map{{Key: "sessionId", Value: sessionID}}
	if r.InputIDs != nil {
		m = append(m, MapEntry{Key: "inputIds", Value: r.InputIDs})
	}
	if r.Reason != "" {
		m = append(m, MapEntry{Key: "reason", Value: r.Reason})
	}
	if r.Actor != "" {
		m = append(m, MapEntry{Key: "actor", Value: r.Actor})
	}
	return m
}

// ResolveBody is the resolve request's JSON body (Reason "" and an unset Data left out).
func ResolveBody(sessionID string, r ResolveRequest) Map {
	m := Map{{Key: "sessionId", Value: sessionID}, {Key: "kind", Value: r.Kind}, {Key: "name", Value: r.Name}, {Key: "outcome", Value: r.Outcome}}
	if r.Reason != "" {
		m = append(m, MapEntry{Key: "reason", Value: r.Reason})
	}
	if r.Data.Set {
		m = append(m, MapEntry{Key: "data", Value: r.Data.Value})
	}
	if r.Actor != "" {
		m = append(m, MapEntry{Key: "actor", Value: r.Actor})
	}
	return m
}

// WakeBody is the wake request's JSON body.
func WakeBody(sessionID string) Map { return Map{{Key: "sessionId", Value: sessionID}} }

var idCounter atomic.Uint32

// NewInputID is a new input id, inp_<32 hex digits> (the first 12 the time in ms, so ids sort by
// creation, as sessiond's are).
func NewInputID() string {
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (40 - 8*i))
	}
	n := idCounter.Add(1)
	b[6], b[7] = byte(n>>8), byte(n)
	_, _ = rand.Read(b[8:])
	return "inp_" + hex.EncodeToString(b[:])
}

// Admit admits a prompt to the session (idempotent by input id; one is generated when none is
// given) and, unless Wake is false, wakes a worker to run it. An image or a file part given by
// its bytes over InlinePartBytes is uploaded first (UploadBlob, for r.Owner) and sent as its
// reference.
func (c *Client) Admit(ctx context.Context, sessionID string, r AdmitRequest) (AdmitReceipt, error) {
	if r.Prompt != "" && len(r.Parts) > 0 {
		return AdmitReceipt{}, &CommandError{Verb: VerbAdmit, Code: CodeInvalidOption,
			Message: "Invalid input: the admission has both Prompt and Parts: give the prompt as a string (Prompt) or as parts (Parts, with TextPart for its text)."}
	}
	if r.ID == "" {
		r.ID = NewInputID()
	} else if p := idProblem(r.ID); p != "" {
		return AdmitReceipt{}, &CommandError{Verb: VerbAdmit, Code: CodeInvalidID, Message: invalidIDMessage("input id", r.ID)}
	}
	if p := idProblem(sessionID); p != "" {
		return AdmitReceipt{}, &CommandError{Verb: VerbAdmit, Code: CodeInvalidID, Message: invalidIDMessage("session id", sessionID)}
	}
	parts, err := uploadLargeParts(r.Parts, func(data []byte, mediaType string) (BlobRef, error) {
		return c.UploadBlob(ctx, bytes.NewReader(data), UploadOptions{MediaType: mediaType, Owner: r.Owner})
	})
	if err != nil {
		return AdmitReceipt{}, err
	}
	r.Parts = parts
	resentEver := false
	for attempt := 1; ; attempt++ {
		var reply struct {
			Receipt AdmitReceipt `json:"receipt"`
		}
		resent, err := c.send(ctx, VerbAdmit, sessionID, AdmitBody(sessionID, r), r.ID, &reply)
		resentEver = resentEver || resent
		if err == nil {
			receipt := reply.Receipt
			if resentEver && !receipt.Created {
				receipt.Created = true // an earlier attempt of this call admitted it
			}
			return receipt, nil
		}
		// the session moved under the worker more often than it retries: the admission is idempotent
		if ErrorCode(err) != CodeSequenceConflict || attempt >= 5 {
			return AdmitReceipt{}, err
		}
		resentEver = true
		pause := time.Duration(attempt*10)*time.Millisecond + time.Duration(mrand.Float64()*float64(attempt*20))*time.Millisecond
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return AdmitReceipt{}, contextError(VerbAdmit, sessionID, ctx.Err())
		}
	}
}

// Wake asks a worker to run the session's pending inputs and says what happened.
func (c *Client) Wake(ctx context.Context, sessionID string) (WakeResult, error) {
	var reply struct {
		Result WakeResult `json:"result"`
	}
	_, err := c.send(ctx, VerbWake, sessionID, WakeBody(sessionID), "", &reply)
	return reply.Result, err
}

// Cancel cancels the session's execution in progress. With r.ExecutionID empty it asks status
// first and cancels the execution it shows in progress, so a resent or late cancel never stops a
// later turn; an earlier attempt that cancelled it (the last one finding nothing to cancel) is
// reported as cancelled.
func (c *Client) Cancel(ctx context.Context, sessionID string, r CancelRequest) (CancelResult, error) {
	target := r.ExecutionID
	if target == "" {
		st, err := c.Status(ctx, sessionID, 0)
		var ce *CommandError
		if err != nil && !errors.As(err, &ce) {
			return CancelResult{}, err
		}
		if err == nil && st.Execution != nil {
			if st.Execution.Outcome != nil {
				return CancelResult{Cancelled: false, Reason: "nothing_to_cancel", Message: fmt.Sprintf("session %s has no execution in progress to cancel", sessionID)}, nil
			}
			target = st.Execution.ID
		}
	}
	var reply struct {
		Result CancelResult `json:"result"`
	}
	resent, err := c.send(ctx, VerbCancel, sessionID, CancelBody(sessionID, CancelRequest{Reason: r.Reason, ExecutionID: target, Actor: r.Actor}), "", &reply)
	if err != nil {
		return CancelResult{}, err
	}
	res := reply.Result
	if res.Cancelled || !resent || res.Reason != "nothing_to_cancel" {
		return res, nil
	}
	st, err := c.Status(ctx, sessionID, 0)
	if err != nil {
		return CancelResult{}, err
	}
	if st.Execution != nil && st.Execution.Cancelled {
		return CancelResult{Cancelled: true, ExecutionID: st.Execution.ID}, nil
	}
	return res, nil
}

// Status is the session's state, seq, execution and one page of pending inputs (from index
// pendingFrom), as a worker sees it in the log.
func (c *Client) Status(ctx context.Context, sessionID string, pendingFrom int64) (Status, error) {
	var st Status
	_, err := c.send(ctx, VerbStatus, sessionID, StatusBody(sessionID, pendingFrom), "", &st)
	return st, err
}

// Drop drops the session's pending inputs unrun (those named, or every pending input of the
// users) with one input.dropped event, and says which.
func (c *Client) Drop(ctx context.Context, sessionID string, r DropRequest) (DropResult, error) {
	for _, id := range r.InputIDs {
		if p := idProblem(id); p != "" {
			return DropResult{}, &CommandError{Verb: VerbDrop, Code: CodeInvalidID, Message: invalidIDMessage("input id", id)}
		}
	}
	var reply struct {
		Result DropResult `json:"result"`
	}
	_, err := c.send(ctx, VerbDrop, sessionID, DropBody(sessionID, r), "", &reply)
	return reply.Result, err
}

// Approve is a person's approval of the call callID the session's turn waits for: the call runs
// once when the turn resumes. reason "" sends none. Idempotent: approving it again answers
// Resolved false; a call already denied is refused (command_refused, reason already_resolved), as
// is a call the turn does not wait for (no_such_wait).
func (c *Client) Approve(ctx context.Context, sessionID, callID, reason string) (ResolveResult, error) {
	return c.resolveWait(ctx, sessionID, ResolveRequest{Kind: "approval", Name: callID, Outcome: "approved", Reason: reason})
}

// Deny is a person's denial of the call callID the session's turn waits for: it never runs, and
// the model is told why (reason; "" sends none). Idempotent as Approve.
func (c *Client) Deny(ctx context.Context, sessionID, callID, reason string) (ResolveResult, error) {
	return c.resolveWait(ctx, sessionID, ResolveRequest{Kind: "approval", Name: callID, Outcome: "denied", Reason: reason})
}

// ResolveWait ends a wait as r says (Approve, Deny and Resolve build r), with r.Actor recorded as
// who did it.
func (c *Client) ResolveWait(ctx context.Context, sessionID string, r ResolveRequest) (ResolveResult, error) {
	return c.resolveWait(ctx, sessionID, r)
}

// Resolve delivers the value (data; nil sends none) of the signal name the session's turn waits
// for (ctx.waitFor(name) in its runner): the turn resumes with it. Idempotent as Approve.
func (c *Client) Resolve(ctx context.Context, sessionID, name string, data any) (ResolveResult, error) {
	return c.resolveWait(ctx, sessionID, ResolveRequest{Kind: "signal", Name: name, Outcome: "delivered", Data: Any{Set: data != nil, Value: data}})
}

func (c *Client) resolveWait(ctx context.Context, sessionID string, r ResolveRequest) (ResolveResult, error) {
	var reply struct {
		Result ResolveResult `json:"result"`
	}
	_, err := c.send(ctx, VerbResolve, sessionID, ResolveBody(sessionID, r), "", &reply)
	return reply.Result, err
}

// Tag changes the session's tags: r.Set sets keys to values, r.Remove removes keys, in one
// session.tagged event. Idempotent: Changed false when the session had these tags already. A
// session with no events is unknown_session; a key both set and removed is refused before it is
// sent (invalid_option).
//
//	res, err := c.Tag(ctx, "ses_1", sessiond.TagRequest{Set: sessiond.Tags{"tier": "gold"}, Remove: []string{"trial"}})
func (c *Client) Tag(ctx context.Context, sessionID string, r TagRequest) (TagResult, error) {
	for _, k := range r.Remove {
		if _, both := r.Set[k]; both {
			return TagResult{}, &CommandError{Verb: VerbTag, Code: CodeInvalidOption,
				Message: fmt.Sprintf("Invalid tags: the tag request both sets and removes %s: do one or the other.", strconv.Quote(k))}
		}
	}
	var reply struct {
		Result TagResult `json:"result"`
	}
	_, err := c.send(ctx, VerbTag, sessionID, TagBody(sessionID, r), "", &reply)
	return reply.Result, err
}

// List is one page of the sessions the filter selects, newest first (by creation time, then
// session id), from a worker's projection, which follows the stream: a session admitted a moment
// ago may not be listed yet. Page on with the filter's After set to the page's Next until Next is
// "": each session is on one page only, however sessions change meanwhile (one created after the
// first page is on none of the later ones). A filter that is not valid is refused before it is
// sent (invalid_option, in the worker's words); so is a cursor that is not a Next, by the worker.
//
//	f := sessiond.ListFilter{Tags: sessiond.Tags{"customer": "acme"}, Limit: 100}
//	for {
//		page, err := c.List(ctx, f)
//		if err != nil { return err }
//		for _, s := range page.Sessions { fmt.Println(s.SessionID, s.State) }
//		if page.Next == "" { break }
//		f.After = page.Next
//	}
func (c *Client) List(ctx context.Context, f ListFilter) (SessionPage, error) {
	if problem := checkListFilter(f); problem != "" {
		return SessionPage{}, &CommandError{Verb: VerbList, Code: CodeInvalidOption, Message: problem}
	}
	var reply struct {
		Sessions []SessionListItem `json:"sessions"`
		Next     *string           `json:"next"`
	}
	if _, err := c.send(ctx, VerbList, "", ListBody(f), "", &reply); err != nil {
		return SessionPage{}, err
	}
	page := SessionPage{Sessions: reply.Sessions}
	if page.Sessions == nil {
		page.Sessions = []SessionListItem{}
	}
	if reply.Next != nil {
		page.Next = *reply.Next
	}
	return page, nil
}

// EncodeRequest is a request body's exact bytes (JSON as JavaScript's JSON.stringify writes
// it). A string that is not valid UTF-8 is refused with invalid_option.
func EncodeRequest(verb string, body Map) ([]byte, error) {
	data, err := wire.AppendJSON(nil, body)
	if err != nil {
		return nil, &CommandError{Verb: verb, Code: CodeInvalidOption, Err: err, Message: fmt.Sprintf("The %s request cannot be sent: %v. Send valid Unicode.", verb, err)}
	}
	return data, nil
}

// DecodeReply reads a command's reply body into out (the success reply's fields; see the typed
// replies) or returns the worker's error reply as a *CommandError.
func DecodeReply(verb string, data []byte, out any) error {
	subject := CommandSubject(verb)
	if !utf8.Valid(data) {
		return &CommandError{Verb: verb, Code: CodeInternal, Message: fmt.Sprintf("The reply to %s on %s is not UTF-8 JSON: is something other than a sessiond worker answering %s?", verb, subject, subject)}
	}
	var head struct {
		OK    *bool `json:"ok"`
		Error *struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return &CommandError{Verb: verb, Code: CodeInternal, Err: err, Message: fmt.Sprintf("The reply to %s on %s is not a sessiond reply (%v): is something other than a sessiond worker answering %s?", verb, subject, err, subject)}
	}
	if head.OK == nil {
		return &CommandError{Verb: verb, Code: CodeInternal, Message: fmt.Sprintf("The reply to %s on %s is not a sessiond reply (no ok field): is something other than a sessiond worker answering %s?", verb, subject, subject)}
	}
	if !*head.OK {
		if head.Error == nil {
			return &CommandError{Verb: verb, Code: CodeInternal, Message: "no error given"}
		}
		return &CommandError{Verb: verb, Code: head.Error.Code, Message: head.Error.Message, Details: head.Error.Details}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &CommandError{Verb: verb, Code: CodeInternal, Err: err, Message: fmt.Sprintf("The reply to %s on %s does not have the shape of a %s reply (%v): do the worker and this client speak the same protocol version?", verb, subject, verb, err)}
	}
	if st, ok := out.(*Status); ok {
		st.Raw = append(json.RawMessage(nil), data...)
	}
	return nil
}

// forSession is " for session <id>", or "" for the list verb (it has none).
func forSession(sessionID string) string {
	if sessionID == "" {
		return ""
	}
	return " for session " + sessionID
}

func contextError(verb, sessionID string, err error) error {
	if verb == VerbUpload {
		return &CommandError{Verb: verb, Code: CodeTimeout, Err: err, Message: fmt.Sprintf("The upload was abandoned (%v): upload the blob again (a chunk sent again is harmless).", err)}
	}
	if verb == VerbList || verb == VerbEvents || verb == VerbBlob {
		return &CommandError{Verb: verb, Code: CodeTimeout, Err: err, Message: fmt.Sprintf("The %s%s was abandoned (%v). It only reads: send it again.", verb, forSession(sessionID), err)}
	}
	return &CommandError{Verb: verb, Code: CodeTimeout, Err: err,
		Message: fmt.Sprintf("The %s%s was abandoned (%v): it may or may not have run. To be sure, check with status (an admit may be sent again with the same input id).", verb, forSession(sessionID), err)}
}

// send sends the request and waits up to the attempt timeout for a reply, then sends the same
// body again (it may reach another worker) until the unanswered attempts add up to the request
// timeout; while no worker serves the subject (nobody received it), it sends again with backoff
// for up to the no-worker retry time. resent: an earlier attempt reached a worker that did not
// answer in time (it may have run it). A late reply to an earlier attempt is taken as the answer.
func (c *Client) send(ctx context.Context, verb, sessionID string, body Map, inputID string, out any) (resent bool, err error) {
	if c.isClosed() {
		return false, &CommandError{Verb: verb, Code: CodeLogClosed, Message: "This sessiond client is closed: connect a new one."}
	}
	if verb == VerbList || verb == VerbUpload {
		sessionID = "" // the verbs without a session
	} else if p := idProblem(sessionID); p != "" {
		return false, &CommandError{Verb: verb, Code: CodeInvalidID, Message: invalidIDMessage("session id", sessionID)}
	}
	data, err := EncodeRequest(verb, body)
	if err != nil {
		return false, err
	}
	subject := c.commandSubject(verb)
	inbox := c.nc.NewInbox()
	replies := make(chan *nats.Msg, 16)
	sub, err := c.nc.ChanSubscribe(inbox, replies)
	if err != nil {
		return false, c.sendFailure(verb, subject, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	perm, unwatch := c.watchPermissions(subject, inbox)
	defer unwatch()

	started := time.Now()
	var unanswered time.Duration
	attempts := 0
	wait := 10 * time.Millisecond
attempt:
	for {
		attempts++
		timeout := min(c.attemptTimeout, c.requestTimeout-unanswered)
		if err := c.nc.PublishRequest(subject, inbox, data); err != nil {
			return unanswered > 0, c.sendFailure(verb, subject, err)
		}
		timer := time.NewTimer(timeout)
		for {
			select {
			case msg := <-replies:
				status := msg.Header.Get("Status")
				if status == "503" { // no responders: nobody received it, so sending it again is safe
					timer.Stop()
					// sent again until the retry window is spent (the last pause is what is left of it)
					left := c.noWorkerRetry - time.Since(started)
					if c.noWorkerRetry < 0 || left <= 0 {
						return unanswered > 0, c.noWorker(verb, subject)
					}
					pause := min(wait/2+time.Duration(mrand.Int64N(int64(wait/2)+1)), left)
					select {
					case <-time.After(pause):
					case <-ctx.Done():
						return unanswered > 0, contextError(verb, sessionID, ctx.Err())
					}
					wait = min(wait*2, 500*time.Millisecond)
					continue attempt
				}
				if status != "" && len(msg.Data) == 0 {
					continue // some other status message (none is expected): keep waiting
				}
				timer.Stop()
				return unanswered > 0, DecodeReply(verb, msg.Data, out)
			case err := <-perm.ch:
				timer.Stop()
				who := c.user
				if who == "" {
					who = "(this connection's user)"
				}
				if c.tenant != "" {
					return false, &CommandError{Verb: verb, Code: CodePermissionDenied, Err: err,
						Message: fmt.Sprintf("NATS user %s may not send %s as tenant %s: nats.conf refuses %s. A tenant's user (sessiond setup --tenant %s) may publish sessiond.t.%s.cmd.> (or, made with --tenant-scopes, only its scopes' verbs).", who, verb, c.tenant, violationSubject(err), c.tenant, c.tenant)}
				}
				return false, &CommandError{Verb: verb, Code: CodePermissionDenied, Err: err,
					Message: fmt.Sprintf("NATS user %s may not send sessiond commands: nats.conf refuses %s. Connect as a user allowed to publish sessiond.cmd.> (the client user in nats.conf; the observer and the workers' own users may not).", who, violationSubject(err))}
			case <-timer.C:
				unanswered += timeout
				if unanswered < c.requestTimeout {
					continue attempt
				}
				retry := fmt.Sprintf("check with status before sending %s again", verb)
				switch {
				case verb == VerbAdmit && inputID != "":
					retry = fmt.Sprintf("admit again with the same input id %s (it is idempotent)", inputID)
				case verb == VerbTag:
					retry = "send the same tag again (it is idempotent)"
				case verb == VerbFork:
					retry = "send the same fork again (it is idempotent: the fork made answers created false)"
				case verb == VerbUpload:
					retry = "upload the blob again (a chunk sent again is harmless)"
				case verb == VerbList || verb == VerbEvents || verb == VerbBlob:
					return true, &CommandError{Verb: verb, Code: CodeTimeout, Err: nats.ErrTimeout,
						Message: fmt.Sprintf("No reply to %s%s within %v (sent %d times): the workers may be busy or gone. It only reads: send it again.", verb, forSession(sessionID), c.requestTimeout, attempts)}
				}
				return true, &CommandError{Verb: verb, Code: CodeTimeout, Err: nats.ErrTimeout,
					Message: fmt.Sprintf("No reply to %s%s within %v (sent %d times): the workers may be busy or gone, so the command may or may not have run. To be sure, %s.", verb, forSession(sessionID), c.requestTimeout, attempts, retry)}
			case <-ctx.Done():
				timer.Stop()
				return unanswered > 0, contextError(verb, sessionID, ctx.Err())
			}
		}
	}
}

func violationSubject(err error) string {
	if m := violationRe.FindStringSubmatch(err.Error()); m != nil {
		if strings.EqualFold(m[1], "publish") {
			return "publishing to " + m[2]
		}
		return "subscribing to " + m[2]
	}
	return "the request"
}

func (c *Client) noWorker(verb, subject string) error {
	retried := ""
	if c.noWorkerRetry > 0 {
		retried = fmt.Sprintf(" (asked again for %v)", c.noWorkerRetry)
	}
	return &CommandError{Verb: verb, Code: CodeNoWorker, Err: nats.ErrNoResponders,
		Message: fmt.Sprintf("No sessiond worker is serving %s on %s%s: start one (sessiond start --nats <url> --nats-user worker --nats-pass <secret>) and retry.", subject, c.nc.ConnectedUrlRedacted(), retried)}
}

func (c *Client) sendFailure(verb, subject string, err error) error {
	if errors.Is(err, nats.ErrConnectionClosed) {
		return &CommandError{Verb: verb, Code: CodeLogClosed, Err: err, Message: fmt.Sprintf("The NATS connection is closed: connect a new client to send %s.", verb)}
	}
	return &CommandError{Verb: verb, Code: CodeTimeout, Err: err, Message: fmt.Sprintf("Sending %s on %s failed: %v. Check the NATS connection and retry.", verb, subject, err)}
}
