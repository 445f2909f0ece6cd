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
