package sessiond

import (
	"context"
	"fmt"
)

// Forks (src/sessions/fork.ts, the fork verb): a new session that starts with another's
// conversation up to a settled point, then lives its own life. Its first event, session.forked
// (SessionForked), holds that conversation as a transcript (transcript.go).

// ForkOptions is what Fork takes. At: the source's seq to fork at, a settled point (a seq after
// which nothing runs or waits: no execution in progress, no open wait, no continuation owed); 0
// forks at the source's last settled point. A seq inside a turn is refused with not_settled (the
// message and the details nearestBefore and nearestAfter name the nearest settled seqs), one past
// the source's head with invalid_option. Tags: the new session's tags (the source's are not
// copied; nil: none).
type ForkOptions struct {
	At   int64
	Tags Tags
	// Owner: who forks; another owner's source answers not_found (the fork keeps the source's owner).
	Owner string
}

// ForkBody is the fork request's JSON body: the new session, its source, then at and tags when
// given (tags sorted).
func ForkBody(sourceID, sessionID string, o ForkOptions) Map {
	m := Map{{Key: "sessionId", Value: sessionID}, {Key: "source", Value: sourceID}}
	if o.At != 0 {
		m = append(m, MapEntry{Key: "at", Value: o.At})
	}
	if len(o.Tags) > 0 {
		m = append(m, MapEntry{Key: "tags", Value: tagsMap(o.Tags)})
	}
	if o.Owner != "" {
		m = append(m, MapEntry{Key: "owner", Value: o.Owner})
	}
	return m
}

// Fork starts sessionID as a fork of sourceID: one session.forked event holding the source's
// conversation up to the settled seq o.At (0: the source's last settled point). The source is
// only read; its pending inputs, waits and executions are not carried (the fork starts idle).
// Idempotent: the same fork sent again answers Created false. A sessionID that has events (other
// than the same fork) is session_exists; a source with no events unknown_session; a point inside
// a turn not_settled; a conversation over the 512 KiB one event holds payload_too_large.
//
//	res, err := c.Fork(ctx, "ses_1", "ses_1_alt", sessiond.ForkOptions{Tags: sessiond.Tags{"branch": "alt"}})
//	// res.From: {ses_1, 13}, res.Items: 4; then c.Admit(ctx, "ses_1_alt", ...) goes on from there
func (c *Client) Fork(ctx context.Context, sourceID, sessionID string, o ForkOptions) (ForkResult, error) {
	if p := idProblem(sourceID); p != "" {
		return ForkResult{}, &CommandError{Verb: VerbFork, Code: CodeInvalidID, Message: invalidIDMessage("source session id", sourceID)}
	}
	if o.At < 0 || o.At > maxSafeInteger {
		return ForkResult{}, &CommandError{Verb: VerbFork, Code: CodeInvalidOption,
			Message: fmt.Sprintf("Invalid fork point %d: fork at a sequence (a whole number >= 1), or 0 for the source's last settled point.", o.At)}
	}
	var reply struct {
		Result ForkResult `json:"result"`
	}
	_, err := c.send(ctx, VerbFork, sessionID, ForkBody(sourceID, sessionID, o), "", &reply)
	return reply.Result, err
}
