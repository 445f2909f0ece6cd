// Command prompt admits a prompt to a sessiond session, waits for the end of the turn that runs
// it, and prints the assistant's answer: the text.completed texts of the execution that ran it to
// its end, one per line, in order.
//
//	prompt SESSION ["text"] [--image PATH|URL]... [--file PATH|URL]... [--json DATA|@FILE]...
//	       --nats nats://127.0.0.1:4222 [--id INPUT_ID] [--timeout 5m]
//
// With --image, --file or --json the prompt is a list of parts, as `sessiond prompt` makes it: the
// text first (it may be left out), then the images, the files and the JSON data, each in the order
// given. A path is sent as its bytes (an image .png .jpg .jpeg .gif .webp; a file one of those or
// .pdf .txt .md .csv .json .html .xml, with its name), an http(s) URL as it is; --json takes JSON
// text, or @FILE to read it from a file.
//
// It subscribes to the session before admitting, so nothing of the turn is missed, and follows
// the turn through a recovery, a hand-back or a wait (the continuation's execution: a turn that
// waits for an approval, a signal or a timer goes on once they are resolved). Exit status 0 when
// the turn succeeded; 1 with a message when it failed, was cancelled, its input was dropped, or no
// end came within --timeout; 2 for a usage mistake. Credentials: SESSIOND_NATS_USER (default
// client) and SESSIOND_NATS_PASS.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	sessiond "github.com/sessiond/sessiond/clients/go"
	"github.com/sessiond/sessiond/clients/go/internal/cli"
)

const usage = `usage: prompt SESSION ["text"] [--image PATH|URL]... [--file PATH|URL]... [--json DATA|@FILE]...
              --nats URL [--id INPUT_ID] [--timeout DURATION]

Admits the prompt, waits for the end of its turn and prints the assistant's text. --image adds an
image: a .png, .jpg, .gif or .webp file (sent as its bytes) or an https URL; --file a file: a .pdf,
.txt, .md, .csv, .json, .html or .xml file (its bytes, with its name) or an https URL; --json JSON
data: the JSON text, or @FILE to read it from a file. Each may be repeated; with any of them the
prompt is a list of parts, the text first (and it may be left out). --id makes a retry safe (the
same input is admitted once). --timeout (default 5m) bounds the wait. --nats takes
comma-separated servers. Credentials from SESSIOND_NATS_USER (default client) and
SESSIOND_NATS_PASS.`

func main() {
	args, err := cli.Parse(os.Args[1:], "nats", "id", "timeout", "image", "file", "json")
	if args.Flags["help"] != "" {
		os.Stdout.WriteString(usage + "\n")
		return
	}
	if err != nil {
		cli.Fail(2, "%v\n%s", err, usage)
	}
	if len(args.Positional) < 1 || len(args.Positional) > 2 {
		cli.Fail(2, "give a session id and the prompt text\n%s", usage)
	}
	session, text, hasText := args.Positional[0], "", len(args.Positional) == 2
	if hasText {
		text = args.Positional[1]
	}
	timeout := 5 * time.Minute
	if v, ok := args.Flags["timeout"]; ok {
		if timeout, err = time.ParseDuration(v); err != nil || timeout <= 0 {
			cli.Fail(2, "--timeout needs a duration such as 30s or 5m, got %q", v)
		}
	}
	inputID := args.Flags["id"]
	if inputID == "" {
		inputID = sessiond.NewInputID()
	}
	if !sessiond.ValidID(session) {
		cli.Fail(2, "invalid session id %q: use 1-128 characters from A-Z a-z 0-9 _ - : + = @", session)
	}
	if !sessiond.ValidID(inputID) {
		cli.Fail(2, "invalid input id %q: use 1-128 characters from A-Z a-z 0-9 _ - : + = @", inputID)
	}
	prompt, parts, err := cli.PromptFromOptions(text, hasText, args.Lists["image"], args.Lists["file"], args.Lists["json"], `prompt ses_1 "what is this?" --image cat.png`)
	if err != nil {
		cli.Fail(2, "%v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client, err := cli.Connect(ctx, args.Flags["nats"])
	if err != nil {
		cli.Fail(1, "%v", err)
	}
	defer client.Close()

	answer, err := run(ctx, client, session, sessiond.AdmitRequest{Prompt: prompt, Parts: parts, ID: inputID})
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("no end of the turn of input %s in session %s within %v (it may still run: follow the session, or prompt again with --id %s)", inputID, session, timeout, inputID)
		}
		client.Close()
		cli.Fail(1, "%v", err)
	}
	for _, t := range answer {
		fmt.Println(t)
	}
}

// run admits the prompt and returns the texts of the execution that ran it to its end.
func run(ctx context.Context, client *sessiond.Client, session string, request sessiond.AdmitRequest) ([]string, error) {
	// where the session is now: the turn's events come after it
	from := int64(0)
	st, err := client.Status(ctx, session, 0)
	switch {
	case err == nil:
		from = st.Seq
	case sessiond.ErrorCode(err) == sessiond.CodeUnknownSession:
	default:
		return nil, err
	}
	events := make(chan sessiond.Event, 4096)
	sub, err := client.Subscribe(ctx, session, from, func(e sessiond.Event) {
		if e.Seq != 0 {
			select {
			case events <- e:
			case <-ctx.Done():
			}
		}
	}, sessiond.CatchUp())
	if err != nil {
		return nil, err
	}
	defer sub.Close()

	receipt, err := client.Admit(ctx, session, request)
	if err != nil {
		return nil, err
	}
	t := &turn{mine: []string{receipt.InputID}, texts: map[string][]string{}}
	if receipt.AdmittedSeq <= from {
		// admitted before (the same --id): what happened since is in the stream
		past, err := client.Replay(ctx, session, sessiond.AfterSeq(receipt.AdmittedSeq-1))
		if err != nil {
			return nil, err
		}
		for _, e := range past {
			if e.Seq > from {
				break
			}
			if done, answer, err := t.see(e); done {
				return answer, err
			}
		}
	}
	for {
		select {
		case e := <-events:
			if done, answer, err := t.see(e); done {
				return answer, err
			}
		case <-sub.Done():
			if err := sub.Err(); err != nil {
				return nil, err
			}
			return nil, ctx.Err()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// turn follows one input through the executions that run it.
type turn struct {
	mine  []string            // our input, and the continuations that carry it on
	runs  []string            // executions that ran (or run) them
	texts map[string][]string // execution -> its text.completed texts
}

func (t *turn) runs_(execution string) bool { return slices.Contains(t.runs, execution) }

func (t *turn) see(e sessiond.Event) (done bool, answer []string, err error) {
	switch p := e.Payload.(type) {
	case *sessiond.InputPromoted:
		if slices.Contains(t.mine, p.InputID) && !t.runs_(p.ExecutionID) {
			t.runs = append(t.runs, p.ExecutionID)
		}
	case *sessiond.InputAdmitted:
		// a continuation of an interrupted or handed-back turn that ran our input
		if p.Continues != nil && (t.runs_(p.Continues.ExecutionID) || slices.ContainsFunc(p.Continues.InputIDs, func(id string) bool { return slices.Contains(t.mine, id) })) {
			t.mine = append(t.mine, p.InputID)
		}
	case *sessiond.InputDropped:
		for _, id := range p.InputIDs {
			if slices.Contains(t.mine, id) && len(t.runs) == 0 {
				return true, nil, fmt.Errorf("input %s was dropped unrun (%s)", id, deref(p.Reason, "no reason given"))
			}
		}
	case *sessiond.TextCompleted:
		if t.runs_(p.ExecutionID) {
			t.texts[p.ExecutionID] = append(t.texts[p.ExecutionID], p.Text)
		}
	case *sessiond.ExecutionSettled:
		if !t.runs_(p.ExecutionID) {
			break
		}
		switch p.Outcome {
		case "succeeded":
			return true, t.texts[p.ExecutionID], nil
		case "failed":
			why := "no error recorded"
			if p.Error != nil {
				why = p.Error.Type + ": " + p.Error.Message
			}
			return true, nil, fmt.Errorf("the turn (execution %s) failed: %s", p.ExecutionID, why)
		}
		// released: handed back on shutdown; waiting: the turn waits for an approval, a signal or a
		// timer and resumes when they are resolved. Either way a continuation carries it on.
	case *sessiond.ExecutionCancelled:
		if t.runs_(p.ExecutionID) {
			return true, nil, fmt.Errorf("the turn (execution %s) was cancelled (%s)", p.ExecutionID, deref(p.Reason, "no reason given"))
		}
	case *sessiond.RecoveryCompleted:
		if t.runs_(p.ExecutionID) {
			if p.ContinuationInputID != nil {
				t.mine = append(t.mine, *p.ContinuationInputID)
				break
			}
			why := "nothing was left to continue"
			if p.Error != nil {
				why = p.Error.Type + ": " + p.Error.Message
			}
			return true, nil, fmt.Errorf("the turn (execution %s) was interrupted and not continued: %s", p.ExecutionID, strings.TrimSpace(why))
		}
	}
	return false, nil, nil
}

func deref(s *string, fallback string) string {
	if s == nil {
		return fallback
	}
	return *s
}
