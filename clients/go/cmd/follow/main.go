// Command follow prints every event of a sessiond session as one JSON line: first what the
// stream holds (after --after), then live events as they come (live-only ones such as text.delta
// too, without seq), each committed event once and in order, until SIGINT or SIGTERM.
//
//	follow SESSION --nats nats://127.0.0.1:4222 [--after SEQ]
//
// Credentials: SESSIOND_NATS_USER (default client) and SESSIOND_NATS_PASS.
package main

import (
	"bufio"
	"context"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	sessiond "github.com/sessiond/sessiond/clients/go"
	"github.com/sessiond/sessiond/clients/go/internal/cli"
)

const usage = `usage: follow SESSION --nats URL [--after SEQ]

Prints every event of SESSION as one JSON line ({"id","type","version","sessionId","time",
"payload","seq","position","committedAt"}; live-only events have no seq): the stream first, then
live, until SIGINT or SIGTERM. --nats takes comma-separated servers. Credentials from
SESSIOND_NATS_USER (default client) and SESSIOND_NATS_PASS.`

func main() {
	args, err := cli.Parse(os.Args[1:], "nats", "after")
	if args.Flags["help"] != "" {
		os.Stdout.WriteString(usage + "\n")
		return
	}
	if err != nil {
		cli.Fail(2, "%v\n%s", err, usage)
	}
	if len(args.Positional) != 1 {
		cli.Fail(2, "give exactly one session id\n%s", usage)
	}
	session := args.Positional[0]
	after := int64(0)
	if v, ok := args.Flags["after"]; ok {
		after, err = strconv.ParseInt(v, 10, 64)
		if err != nil || after < 0 {
			cli.Fail(2, "--after needs a whole number >= 0, got %q", v)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	client, err := cli.Connect(ctx, args.Flags["nats"])
	if err != nil {
		cli.Fail(1, "%v", err)
	}
	defer client.Close()

	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var mu sync.Mutex
	var writeErr error
	print := func(e sessiond.Event) {
		line, err := wire.AppendJSON(nil, e)
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			out.Write(append(line, '\n'))
			err = out.Flush()
		}
		if err != nil && writeErr == nil {
			writeErr = err
			stop() // stdout is gone: nothing more to do
		}
	}
	sub, err := client.Subscribe(ctx, session, after, print, sessiond.CatchUp(),
		sessiond.OnInvalid(func(i sessiond.InvalidMessage) {
			os.Stderr.WriteString("follow: skipped an invalid live message on " + i.Subject + ": " + i.Err.Message + "\n")
		}),
		sessiond.OnError(func(err error) { os.Stderr.WriteString("follow: " + err.Error() + "\n") }),
	)
	if err != nil {
		cli.Fail(1, "%v", err)
	}
	select {
	case <-ctx.Done():
	case <-sub.Done():
	}
	_ = sub.Close()
	if err := sub.Err(); err != nil {
		cli.Fail(1, "%v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if writeErr != nil {
		cli.Fail(1, "writing to stdout: %v", writeErr)
	}
}
