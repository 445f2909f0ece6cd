package sessiond_test

import (
	"context"
	"fmt"

	sessiond "github.com/sessiond/sessiond/clients/go"
)

// Example is the README's example (README.md, "Clients in Go and Python"; the docs test checks that
// its lines are these). It is compiled by go test; live_test.go runs the same calls against a world.
func Example() {
	ctx := context.Background()
	url := "nats://127.0.0.1:4222" // your server
	c, _ := sessiond.Connect(ctx, sessiond.Options{URL: url, User: "client", Pass: "client-dev-secret"})
	sub, _ := c.Subscribe(ctx, "ses_1", 0, func(e sessiond.Event) { fmt.Println(e.Seq, e.Type) }, sessiond.CatchUp())
	receipt, _ := c.Admit(ctx, "ses_1", sessiond.AdmitRequest{Prompt: "hello"})
	events, _ := c.Replay(ctx, "ses_1")
	fmt.Println(receipt.InputID, len(events))
	sub.Close()
	c.Close()
}

// ExampleClient_Tag gives a session tags on its admission, changes them, and reads them back.
func ExampleClient_Tag() {
	ctx := context.Background()
	c, _ := sessiond.Connect(ctx, sessiond.Options{URL: "nats://127.0.0.1:4222", User: "client", Pass: "client-dev-secret"})
	_, _ = c.Admit(ctx, "ses_1", sessiond.AdmitRequest{Prompt: "hello", Tags: sessiond.Tags{"customer": "acme", "trial": "yes"}})
	res, _ := c.Tag(ctx, "ses_1", sessiond.TagRequest{Set: sessiond.Tags{"tier": "gold"}, Remove: []string{"trial"}})
	fmt.Println(res.Tags, res.Changed) // map[customer:acme tier:gold] true
	st, _ := c.Status(ctx, "ses_1", 0)
	fmt.Println(st.Tags["tier"]) // gold
	c.Close()
}

// ExampleClient_List pages through the sessions of a customer, newest first.
func ExampleClient_List() {
	ctx := context.Background()
	c, _ := sessiond.Connect(ctx, sessiond.Options{URL: "nats://127.0.0.1:4222", User: "client", Pass: "client-dev-secret"})
	filter := sessiond.ListFilter{Tags: sessiond.Tags{"customer": "acme"}, State: "idle", Limit: 100}
	for {
		page, err := c.List(ctx, filter)
		if err != nil {
			break
		}
		for _, s := range page.Sessions {
			fmt.Println(s.SessionID, s.State, s.PendingInputs, s.Tags)
		}
		if page.Next == "" {
			break
		}
		filter.After = page.Next
	}
	c.Close()
}

// ExampleClient_Admit_parts admits a prompt of parts (text, an image's bytes, JSON data) and reads
// its text form back from the log.
func ExampleClient_Admit_parts() {
	ctx := context.Background()
	c, _ := sessiond.Connect(ctx, sessiond.Options{URL: "nats://127.0.0.1:4222", User: "client", Pass: "client-dev-secret"})
	jpeg := []byte{0xff, 0xd8, 0xff} // the image's bytes
	_, _ = c.Admit(ctx, "ses_1", sessiond.AdmitRequest{Parts: []sessiond.PromptPart{
		sessiond.TextPart("what is on this receipt?"),
		sessiond.ImageBytes(jpeg, "image/jpeg"),
		sessiond.JSONPart(map[string]any{"currency": "EUR"}),
	}})
	events, _ := c.Replay(ctx, "ses_1")
	for _, e := range events {
		if p, ok := e.Payload.(*sessiond.InputAdmitted); ok {
			fmt.Println(sessiond.PromptText(p.Prompt)) // what is on this receipt?\n[image image/jpeg, 3 bytes]\n{"currency":"EUR"}
		}
	}
	c.Close()
}

// ExampleClient_Fork forks a session at its last settled point and reads the conversation the
// fork starts with from its first event, session.forked.
func ExampleClient_Fork() {
	ctx := context.Background()
	c, _ := sessiond.Connect(ctx, sessiond.Options{URL: "nats://127.0.0.1:4222", User: "client", Pass: "client-dev-secret"})
	res, err := c.Fork(ctx, "ses_1", "ses_1_alt", sessiond.ForkOptions{Tags: sessiond.Tags{"branch": "alt"}})
	if sessiond.ErrorCode(err) == sessiond.CodeNotSettled {
		fmt.Println(err) // ... is inside a turn. Fork at 1 or 13, the nearest settled sequences (between turns).
	}
	fmt.Println(res.From.SessionID, res.From.Seq, res.Items, res.Created) // ses_1 13 4 true
	events, _ := c.Replay(ctx, "ses_1_alt")
	if len(events) == 0 {
		return
	}
	if forked, ok := events[0].Payload.(*sessiond.SessionForked); ok {
		for _, item := range forked.Transcript {
			switch it := item.(type) {
			case *sessiond.TranscriptUser:
				fmt.Println("user:", it.Text)
			case *sessiond.TranscriptAssistant:
				for _, p := range it.Parts {
					if t, ok := p.(*sessiond.TranscriptText); ok && t.Type == "text" {
						fmt.Println("assistant:", t.Text)
					}
				}
			case *sessiond.TranscriptSummary:
				fmt.Println("summary:", it.Summary)
			}
		}
	}
	_, _ = c.Admit(ctx, "ses_1_alt", sessiond.AdmitRequest{Prompt: "and if we did it the other way?"})
	c.Close()
}

// ExampleClient_Events reads a session's events after the last one seen, through the workers
// (the events command: no consumer on the stream), page after page until none are left.
func ExampleClient_Events() {
	ctx := context.Background()
	c, _ := sessiond.Connect(ctx, sessiond.Options{URL: "nats://127.0.0.1:4222", User: "client", Pass: "client-dev-secret"})
	events, err := c.Events(ctx, "ses_1", sessiond.EventsOptions{AfterSeq: 10, Limit: 100})
	if sessiond.ErrorCode(err) == sessiond.CodeUnknownSession {
		fmt.Println(err) // ... Session ses_1 has no events, so there is nothing to read. ...
	}
	for _, e := range events {
		fmt.Println(e.Seq, e.Type) // 11 input.admitted, 12 execution.claimed, ... in order
	}
	c.Close()
}
