package sessiond

// The follow and prompt programs, built with go build and run as subprocesses against the world.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	programsOnce sync.Once
	programsDir  string
	programsErr  error
)

// programs builds cmd/follow and cmd/prompt once into a temporary folder.
func programs(t *testing.T) (follow, prompt string) {
	t.Helper()
	programsOnce.Do(func() {
		programsDir, programsErr = os.MkdirTemp("", "sessiond-go-programs-")
		if programsErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", programsDir+string(filepath.Separator), "./cmd/follow", "./cmd/prompt")
		cmd.Dir = filepath.Join(repoRoot(), "clients", "go")
		out, err := cmd.CombinedOutput()
		if err != nil {
			programsErr = errors.New(string(out) + err.Error())
		}
	})
	if programsErr != nil {
		t.Fatalf("go build ./cmd/follow ./cmd/prompt: %v", programsErr)
	}
	return filepath.Join(programsDir, "follow"), filepath.Join(programsDir, "prompt")
}

func programEnv(w *world) []string {
	return append(os.Environ(), "SESSIOND_NATS_USER="+w.users["client"].User, "SESSIOND_NATS_PASS="+w.users["client"].Pass)
}

// followProcess is a running `follow`, its output lines gathered as they come.
type followProcess struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []Map
	bad    []string
	stderr bytes.Buffer
	done   chan struct{}
}

func startFollow(t *testing.T, w *world, args ...string) *followProcess {
	t.Helper()
	follow, _ := programs(t)
	f := &followProcess{cmd: exec.Command(follow, args...), done: make(chan struct{})}
	f.cmd.Env = programEnv(w)
	f.cmd.Stderr = &f.stderr
	stdout, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(f.done)
		scanner := bufio.NewScanner(stdout)
		scanner.Buffer(make([]byte, 1<<20), 1<<24)
		for scanner.Scan() {
			v, err := wire.ParseJSON(scanner.Bytes())
			f.mu.Lock()
			if m, ok := v.(Map); err == nil && ok {
				f.lines = append(f.lines, m)
			} else {
				f.bad = append(f.bad, scanner.Text())
			}
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if f.cmd.ProcessState == nil {
			_ = f.cmd.Process.Kill()
			_ = f.cmd.Wait()
		}
	})
	return f
}

func (f *followProcess) committed() []Map {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Map
	for _, l := range f.lines {
		if seq, ok := l.Get("seq"); ok && seq != nil {
			out = append(out, l)
		}
	}
	return out
}

func (f *followProcess) liveOnly() []Map {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Map
	for _, l := range f.lines {
		if seq, _ := l.Get("seq"); seq == nil {
			out = append(out, l)
		}
	}
	return out
}

// stop sends SIGTERM and checks that follow exits 0.
func (f *followProcess) stop(t *testing.T) {
	t.Helper()
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-f.done
	if err := f.cmd.Wait(); err != nil {
		t.Fatalf("follow after SIGTERM: %v\n%s", err, f.stderr.String())
	}
	if len(f.bad) > 0 {
		t.Fatalf("follow printed lines that are not JSON objects: %q", f.bad)
	}
}

// sameLines checks follow's committed lines against the stream, seq by seq.
func sameLines(t *testing.T, got, want []Map) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("follow printed %d committed events, the stream holds %d: %v vs %v", len(got), len(want), wantSeqs(got), wantSeqs(want))
	}
	for i := range got {
		for _, key := range []string{"id", "type", "version", "sessionId", "seq", "time", "position"} {
			if !sameValue(get(got[i], key), get(want[i], key)) {
				t.Fatalf("line %d: %s is %v, the stream's %v (%s)", i, key, get(got[i], key), get(want[i], key), show(got[i]))
			}
		}
		if !sameUnordered(get(got[i], "payload"), get(want[i], "payload")) {
			t.Fatalf("line %d payload %s, the stream's %s", i, show(get(got[i], "payload")), show(get(want[i], "payload")))
		}
	}
}

func runPrompt(t *testing.T, w *world, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	_, prompt := programs(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prompt, args...)
	cmd.Env = programEnv(w)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("prompt: %v", err)
	}
	return out.String(), errOut.String(), code
}

// echoTexts is the text.completed texts of the execution that ran the input, from the stream.
func echoTexts(events []Map, inputID string) []string {
	var execution string
	var texts []string
	for _, e := range events {
		p := get(e, "payload").(Map)
		switch get(e, "type") {
		case "input.promoted":
			if str(p, "inputId") == inputID {
				execution = str(p, "executionId")
			}
		case "text.completed":
			if execution != "" && str(p, "executionId") == execution {
				texts = append(texts, str(p, "text"))
			}
		}
	}
	return texts
}

func TestFollowAndPromptPrograms(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	s := newSession(t)
	f := startFollow(t, w, s, "--nats", w.url)

	// a prompt through the Node client, then one through prompt
	w.admit(t, s, "alpha beta gamma delta")
	first := quiet(t, w, c, s, 15*time.Second)
	waitFor(t, 10*time.Second, "follow to print the first turn", func() bool { return len(f.committed()) >= len(first) })

	out, errOut, code := runPrompt(t, w, s, "epsilon zeta eta", "--nats", w.url, "--id", "inp_"+s+"_prompt")
	if code != 0 {
		t.Fatalf("prompt exited %d: %s", code, errOut)
	}
	want := quiet(t, w, c, s, 15*time.Second)
	texts := echoTexts(want, "inp_"+s+"_prompt")
	if len(texts) == 0 || out != strings.Join(texts, "\n")+"\n" || !strings.Contains(out, "echo: epsilon") {
		t.Fatalf("prompt printed %q; the turn's texts are %q", out, texts)
	}
	// the same input again: admitted once, the same answer
	again, errOut, code := runPrompt(t, w, s, "epsilon zeta eta", "--nats", w.url, "--id", "inp_"+s+"_prompt")
	if code != 0 || again != out {
		t.Fatalf("prompt again exited %d with %q (%s)", code, again, errOut)
	}
	if now := w.events(t, s); len(now) != len(want) {
		t.Fatalf("the repeated prompt added %d events", len(now)-len(want))
	}

	waitFor(t, 10*time.Second, "follow to print everything", func() bool { return len(f.committed()) >= len(want) })
	f.stop(t)
	sameLines(t, f.committed(), want)
	deltas := 0
	for _, l := range f.liveOnly() {
		if get(l, "type") == "text.delta" && str(l, "sessionId") == s {
			deltas++
		}
	}
	if deltas == 0 {
		t.Fatal("follow printed no live-only text.delta")
	}

	// follow from a seq: the stream after it, and nothing before
	f2 := startFollow(t, w, "--after", "5", s, "--nats", w.url)
	waitFor(t, 10*time.Second, "follow --after 5 to print the rest", func() bool { return len(f2.committed()) >= len(want)-5 })
	f2.stop(t)
	sameLines(t, f2.committed(), want[5:])

	// the programs say what is wrong, with a non-zero status
	if _, errOut, code := runPrompt(t, w, "ses.bad", "hi", "--nats", w.url); code == 0 || !strings.Contains(errOut, "invalid session id") {
		t.Fatalf("prompt with a bad session id: %d %s", code, errOut)
	}
	if _, errOut, code := runPrompt(t, w, s, "hi"); code == 0 || !strings.Contains(errOut, "--nats") {
		t.Fatalf("prompt without --nats: %d %s", code, errOut)
	}
	follow, _ := programs(t)
	cmd := exec.Command(follow, s, "--nats", w.url)
	cmd.Env = append(os.Environ(), "SESSIOND_NATS_USER=client", "SESSIOND_NATS_PASS=wrong")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "password") {
		t.Fatalf("follow with a wrong password: %v %s", err, out)
	}
}

// prompt with --image, --file and --json sends a prompt of parts as `sessiond prompt` makes it
// (src/cli/commands/prompt-parts.ts): the text first, then the images, the files and the JSON data,
// each in the order given, a path as its bytes and a URL as it is; the echo worker runs its text
// form. Bad parts exit 2 and say what to fix, in the Node CLI's words.
func TestPromptProgramWithParts(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	png := write("cat.png", []byte{0x89, 0x50, 0x4e, 0x47, 1, 2, 3})
	pdf := write("invoice.pdf", []byte("%PDF-1.4 invoice"))
	order := write("order.json", []byte(`{"order": 42, "lines": [{"sku": "A-1"}]}`))
	s := newSession(t)
	id := "inp_" + s + "_parts"
	out, errOut, code := runPrompt(t, w, s, "what is in these?", "--image", png, "--image", "https://example.com/dog.jpg",
		"--file", pdf, "--json", "@"+order, "--json", "[1, 2]", "--nats", w.url, "--id", id)
	if code != 0 {
		t.Fatalf("prompt with parts exited %d: %s", code, errOut)
	}
	events := quiet(t, w, c, s, 15*time.Second)
	want := `[{"type":"text","text":"what is in these?"},{"type":"image","data":"iVBORwECAw==","mediaType":"image/png"},` +
		`{"type":"image","url":"https://example.com/dog.jpg","mediaType":"image/jpeg"},` +
		`{"type":"file","data":"JVBERi0xLjQgaW52b2ljZQ==","mediaType":"application/pdf","filename":"invoice.pdf"},` +
		`{"type":"json","value":{"order":42,"lines":[{"sku":"A-1"}]}},{"type":"json","value":[1,2]}]`
	if get(events[0], "type") != "input.admitted" || show(get(get(events[0], "payload").(Map), "prompt")) != want {
		t.Fatalf("admitted %s\nwant %s", show(events[0]), want)
	}
	texts := echoTexts(events, id)
	if len(texts) == 0 || out != strings.Join(texts, "\n")+"\n" || !strings.Contains(out, "what is in these?") || !strings.Contains(out, "invoice.pdf") {
		t.Fatalf("prompt printed %q; the turn's texts are %q", out, texts)
	}

	// parts alone: no text part
	s2 := newSession(t)
	if _, errOut, code := runPrompt(t, w, s2, "--json", `{"a": true}`, "--nats", w.url); code != 0 {
		t.Fatalf("prompt of JSON alone exited %d: %s", code, errOut)
	}
	if got := show(get(get(w.events(t, s2)[0], "payload").(Map), "prompt")); got != `[{"type":"json","value":{"a":true}}]` {
		t.Fatalf("JSON alone admitted as %s", got)
	}

	// bad parts: exit 2 before anything is sent, saying what to fix
	for _, c := range []struct {
		args []string
		why  string
	}{
		{[]string{"--image", filepath.Join(dir, "cat.bmp")}, "cat.bmp: an image must be one of .png, .jpg, .jpeg, .gif, .webp (by its name), or an https URL."},
		{[]string{"--image", filepath.Join(dir, "missing.png")}, "missing.png: cannot read it (ENOENT)."},
		{[]string{"--file", dir + "/.png"}, "a file must be one of .png"}, // no extension, as Node's extname says
		{[]string{"--json", "{nope"}, `; give JSON text like '{"order": 42}' or @FILE.`},
		{[]string{"--json", "@" + filepath.Join(dir, "none.json")}, "none.json: cannot read " + filepath.Join(dir, "none.json") + " (ENOENT)."},
		{[]string{"--file", "https://example.com/report"}, "--file https://example.com/report: cannot tell the file's type from its name; give a URL ending in .png"},
	} {
		bad := newSession(t)
		_, errOut, code := runPrompt(t, w, append([]string{bad, "x"}, append(c.args, "--nats", w.url)...)...)
		if code != 2 || !strings.Contains(errOut, c.why) {
			t.Fatalf("prompt %v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.why)
		}
		if n := len(w.events(t, bad)); n != 0 {
			t.Fatalf("prompt %v wrote %d events", c.args, n)
		}
	}
	if _, errOut, code := runPrompt(t, w, newSession(t), "--nats", w.url); code != 2 || !strings.Contains(errOut, "Give the prompt text, or parts with --image, --file or --json") {
		t.Fatalf("prompt of nothing: exit %d, %q", code, errOut)
	}
}
