package sessiond

// The test world (clients/testing/world.ts): a real nats-server and real sessiond workers, driven
// over the world's stdin and stdout, one per test binary, started on first use.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

type world struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan []byte
	url     string
	users   map[string]struct{ User, Pass string }
	workers []int // indexes of the running workers
	mu      sync.Mutex
	stderr  *tailBuffer
}

var (
	theWorld  *world
	worldErr  error
	worldOnce sync.Once
)

// repoRoot is the repository root, found from this file's place (clients/go/world_test.go).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func TestMain(m *testing.M) {
	code := m.Run()
	if theWorld != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "--- the world's output (last part):\n%s\n", theWorld.stderr.String())
		}
		theWorld.stop()
	}
	if theTenantWorld != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "--- the tenant world's output (last part):\n%s\n", theTenantWorld.stderr.String())
		}
		theTenantWorld.stop()
	}
	if programsDir != "" {
		_ = os.RemoveAll(programsDir)
	}
	os.Exit(code)
}

// getWorld starts the world once (the tests share it) and fails the test when it cannot.
func getWorld(t *testing.T) *world {
	t.Helper()
	worldOnce.Do(func() { theWorld, worldErr = startWorld() })
	if worldErr != nil {
		t.Fatalf("could not start the test world (node --import tsx clients/testing/world.ts in %s; it needs node and the repo's npm ci): %v", repoRoot(), worldErr)
	}
	return theWorld
}

func startWorld() (*world, error) {
	return startWorldScript("clients/testing/world.ts", "--workers", "1", "--echo-delay-ms", "200")
}

// startWorldScript starts a world script (a path from the repository root) with these arguments
// and waits for its ready line.
func startWorldScript(script string, args ...string) (*world, error) {
	root := repoRoot()
	if _, err := os.Stat(filepath.Join(root, script)); err != nil {
		return nil, err
	}
	cmd := exec.Command("node", append([]string{"--import", "tsx", script}, args...)...)
	cmd.Dir = root
	w := &world{cmd: cmd, lines: make(chan []byte, 16), stderr: &tailBuffer{max: 256 << 10}, workers: []int{0}}
	cmd.Stderr = w.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	w.stdin = stdin
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				w.lines <- line
			}
			if err != nil {
				close(w.lines)
				return
			}
		}
	}()
	select {
	case line, ok := <-w.lines:
		if !ok {
			_ = cmd.Wait()
			return nil, fmt.Errorf("the world exited before it was ready:\n%s", w.stderr.String())
		}
		var ready struct {
			Ready bool
			URL   string
			Error string
			Users map[string]struct{ User, Pass string }
		}
		if err := json.Unmarshal(line, &ready); err != nil || !ready.Ready {
			return nil, fmt.Errorf("the world did not start: %s %s\n%s", line, ready.Error, w.stderr.String())
		}
		w.url, w.users = ready.URL, ready.Users
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("the world was not ready within 90 s:\n%s", w.stderr.String())
	}
	return w, nil
}

func (w *world) stop() {
	_ = w.stdin.Close() // the end of stdin stops everything
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = w.cmd.Process.Kill()
	}
}

// do sends one command and returns its answer (an {"ok":false} answer fails the test).
func (w *world) do(t *testing.T, command map[string]any) Map {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	line, _ := json.Marshal(command)
	if _, err := w.stdin.Write(append(line, '\n')); err != nil {
		t.Fatalf("world %v: %v", command["cmd"], err)
	}
	select {
	case answer, ok := <-w.lines:
		if !ok {
			t.Fatalf("the world exited during %v", command["cmd"])
		}
		v, err := wire.ParseJSON(answer)
		if err != nil {
			t.Fatalf("world %v answered %s: %v", command["cmd"], answer, err)
		}
		m := v.(Map)
		if ok, _ := m.Get("ok"); ok != true {
			t.Fatalf("world %v failed: %s", command["cmd"], answer)
		}
		return m
	case <-time.After(90 * time.Second):
		t.Fatalf("the world did not answer %v within 90 s", command["cmd"])
	}
	return nil
}

// events is the session's events read from the stream by the Node client.
func (w *world) events(t *testing.T, sessionID string) []Map {
	t.Helper()
	answer := w.do(t, map[string]any{"cmd": "events", "sessionId": sessionID})
	list, _ := answer.Get("events")
	var out []Map
	for _, e := range list.([]any) {
		out = append(out, e.(Map))
	}
	return out
}

// admit admits through the Node client.
func (w *world) admit(t *testing.T, sessionID, prompt string) Map {
	t.Helper()
	answer := w.do(t, map[string]any{"cmd": "admit", "sessionId": sessionID, "prompt": prompt})
	receipt, _ := answer.Get("receipt")
	return receipt.(Map)
}

// killWorker SIGKILLs the oldest running worker and starts a new one.
func (w *world) replaceWorker(t *testing.T) {
	t.Helper()
	index := w.workers[0]
	w.do(t, map[string]any{"cmd": "kill_worker", "index": index})
	answer := w.do(t, map[string]any{"cmd": "start_worker"})
	n, _ := answer.Get("index")
	w.workers = append(w.workers[1:], int(n.(int64)))
}

func (w *world) restartNATS(t *testing.T) {
	t.Helper()
	w.do(t, map[string]any{"cmd": "restart_nats"})
}

// connect is a client of the world as one of its users.
func (w *world) connect(t *testing.T, user string) *Client {
	t.Helper()
	u, ok := w.users[user]
	if !ok {
		t.Fatalf("the world has no user %s", user)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, Options{URL: w.url, User: u.User, Pass: u.Pass, Logf: t.Logf})
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var sessionCounter int

// newSession is a fresh session id for one test.
func newSession(t *testing.T) string {
	sessionCounter++
	return fmt.Sprintf("go_%d_%d", time.Now().UnixMilli()%1_000_000_000, sessionCounter)
}
