// Package cli holds what the follow and prompt programs share: arguments (flags may come before
// or after the positional ones), the connection from --nats and SESSIOND_NATS_USER /
// SESSIOND_NATS_PASS, and error output.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	sessiond "github.com/sessiond/sessiond/clients/go"
)

// Args is a command line split into positional arguments and --flag values: Flags holds a flag's
// last value, Lists every value of it in order (a flag given more than once, such as --image).
type Args struct {
	Positional []string
	Flags      map[string]string
	Lists      map[string][]string
}

// Parse splits args; valued names the flags that take a value (every flag here does).
func Parse(args []string, valued ...string) (Args, error) {
	out := Args{Flags: map[string]string{}, Lists: map[string][]string{}}
	takes := map[string]bool{}
	for _, v := range valued {
		takes[v] = true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			out.Positional = append(out.Positional, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out.Positional = append(out.Positional, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "h" || name == "help" {
			out.Flags["help"] = "true"
			continue
		}
		if !takes[name] {
			return out, fmt.Errorf("unknown option %s", a)
		}
		if !hasValue {
			if i+1 >= len(args) {
				return out, fmt.Errorf("option --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		out.Flags[name] = value
		out.Lists[name] = append(out.Lists[name], value)
	}
	return out, nil
}

// Connect connects to --nats (comma-separated servers allowed) as SESSIOND_NATS_USER (default
// client) with SESSIOND_NATS_PASS (default the development password of that user in nats.conf
// when the user is client or observer).
func Connect(ctx context.Context, url string) (*sessiond.Client, error) {
	if url == "" {
		url = os.Getenv("SESSIOND_NATS_URL")
	}
	if url == "" {
		return nil, errors.New("--nats URL is required (e.g. --nats nats://127.0.0.1:4222)")
	}
	user := os.Getenv("SESSIOND_NATS_USER")
	if user == "" {
		user = "client"
	}
	pass, ok := os.LookupEnv("SESSIOND_NATS_PASS")
	if !ok {
		switch user {
		case "client":
			pass = "client-dev-secret"
		case "observer":
			pass = "observer-dev-secret"
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return sessiond.Connect(cctx, sessiond.Options{URL: url, User: user, Pass: pass, Name: "sessiond-go-" + programName()})
}

func programName() string {
	name := os.Args[0]
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// Fail prints "<program>: <message>" on stderr and exits with code.
func Fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", programName(), fmt.Sprintf(format, args...))
	os.Exit(code)
}
