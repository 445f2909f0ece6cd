package sessiond

// Prompts of parts: the catalog's checks of each part (the same verdicts as sessiond's zod schema
// gives these), the text form (sessiond's promptText), the admit body, the round trip through the
// codec, and end to end against the test world: admitted, run by the echo worker, and read back
// live and from the stream with its parts intact.

import (
	"bytes"
	"context"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// partVerdicts: one part each (JSON text), and whether sessiond's catalog takes it.
var partVerdicts = []struct {
	part string
	ok   bool
}{
	{`{"type":"text","text":"hi"}`, true},
	{`{"type":"text","text":""}`, true},
	{`{"type":"image","url":"https://example.com/a.png"}`, true},
	{`{"type":"image","url":"http://example.com/a.png","mediaType":"image/png"}`, true},
	{`{"type":"image","url":"data:image/png;base64,AAAA"}`, true},
	{`{"type":"image","data":"iVBORw==","mediaType":"image/svg+xml"}`, true},
	{`{"type":"image","data":"","mediaType":"image/png"}`, true}, // no bytes is base64 too
	{`{"mediaType":"image/png","url":"https://example.com/a.png","type":"image"}`, true},
	{`{"type":"file","url":"https://example.com/r.csv","mediaType":"text/csv"}`, true},
	{`{"type":"file","data":"JVBERi0xLjQ=","mediaType":"application/pdf","filename":"invoice.pdf"}`, true},
	{`{"type":"file","data":"AAAA","mediaType":"application/vnd.ms-excel","filename":"` + strings.Repeat("😀", 256) + `"}`, true}, // 256 code points
	{`{"type":"json","value":null}`, true},
	{`{"type":"json","value":[1,"two",null,true,{"b":2.5}]}`, true},
	{`{"type":"json","value":"a string"}`, true},

	{`{"type":"text"}`, false},
	{`{"type":"text","text":1}`, false},
	{`{"type":"text","text":"x","extra":1}`, false}, // a part is a strict object
	{`{"type":"image"}`, false},
	{`{"type":"image","url":"ftp://example.com/a.png"}`, false},
	{`{"type":"image","url":"HTTPS://example.com/a.png"}`, false},
	{`{"type":"image","url":"https://example.com/a.png","mediaType":"PNG"}`, false},
	{`{"type":"image","url":"https://example.com/a.png","mediaType":"image/"}`, false},
	{`{"type":"image","url":"https://example.com/a.png","mediaType":"image/png\n"}`, false}, // JavaScript's $ ends the string
	{`{"type":"image","url":"https://example.com/a.png","mediaType":null}`, false},
	{`{"type":"image","data":"iVBORw=="}`, false}, // bytes need their media type
	{`{"type":"image","data":"abc","mediaType":"image/png"}`, false},
	{`{"type":"image","data":"iVBORw","mediaType":"image/png"}`, false},
	{`{"type":"image","url":"https://example.com/a.png","data":"AAAA","mediaType":"image/png"}`, false},
	{`{"type":"image","url":"https://example.com/a.png","filename":"a.png"}`, false},
	{`{"type":"file","url":"https://example.com/r.csv"}`, false}, // a file needs its media type
	{`{"type":"file","data":"AAAA","mediaType":"text/csv","filename":""}`, false},
	{`{"type":"file","data":"AAAA","mediaType":"text/csv","filename":"` + strings.Repeat("😀", 256) + `x"}`, false},
	{`{"type":"file","data":"AAAA","mediaType":"text/csv","filename":"` + strings.Repeat("n", 257) + `"}`, false},
	{`{"type":"json"}`, false},
	{`{"type":"json","value":1,"text":"x"}`, false},
	{`{"type":"video","url":"https://example.com/a.mp4"}`, false},
	{`{"url":"https://example.com/a.png"}`, false},
	{`"text"`, false},
	{`null`, false},
	{`[]`, false},
}

func admittedWith(prompt any) Map {
	return Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: prompt}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}}
}

func TestPromptPartChecks(t *testing.T) {
	for _, c := range partVerdicts {
		part, err := wire.ParseJSON([]byte(c.part))
		if err != nil {
			t.Fatalf("%s: %v", c.part, err)
		}
		for _, version := range []int64{1, 2} { // a version-1 payload reads through the (identity) upcaster
			p, v, derr := decodePayload("input.admitted", version, admittedWith([]any{TextPart("first").wire(), part}), false)
			switch {
			case c.ok && derr != nil:
				t.Errorf("%s (version %d) refused: %v", c.part, version, derr)
			case !c.ok && (derr == nil || derr.Code != CodeInvalidPayload || !strings.Contains(derr.Message, "payload.prompt[1]: ")):
				t.Errorf("%s (version %d) accepted, or refused without naming the part (%v)", c.part, version, derr)
			case c.ok:
				if v != 2 {
					t.Errorf("%s reads as version %d", c.part, v)
				}
				// read, then written again in the catalog's key order: the same part
				got := payloadMap(p)
				prompt := get(got, "prompt").([]any)
				if !sameUnordered(prompt[1], part) {
					t.Errorf("%s is written again as %s", c.part, show(prompt[1]))
				}
			}
		}
	}
	// values JSON cannot carry (msgpack can)
	for _, value := range []any{math.NaN(), math.Inf(1), []byte{1}, []any{Map{{Key: "n", Value: math.Inf(-1)}}}} {
		if _, _, err := decodePayload("input.admitted", 2, admittedWith([]any{Map{{Key: "type", Value: "json"}, {Key: "value", Value: value}}}), false); err == nil {
			t.Errorf("a JSON part of %#v accepted", value)
		}
	}
	bad := func(prompt any, mentions string) {
		t.Helper()
		_, _, err := decodePayload("input.admitted", 2, admittedWith(prompt), false)
		if err == nil || err.Code != CodeInvalidPayload || !strings.Contains(err.Message, mentions) {
			t.Errorf("prompt %s: %v, want invalid_payload mentioning %q", show(prompt), err, mentions)
		}
	}
	bad([]any{}, "payload.prompt: expected a string or at least one part")
	bad(int64(5), "payload.prompt: expected a string or a list of parts, got number")
	bad(nil, "payload.prompt: expected a string or a list of parts, got null")
	bad([]any{Map{{Key: "type", Value: "image"}}}, `payload.prompt[0]: "image" is not a valid part: an image is { "type": "image", "url": "https://..." }`)
	bad([]any{Map{{Key: "type", Value: "video"}}}, `type must be "text", "image", "file" or "json"`)
	bad([]any{"text"}, `payload.prompt[0]: expected an object like { "type": "text", "text": "..." }, got string`)
	if _, _, err := decodePayload("input.admitted", 2, Map{{Key: "inputId", Value: "i"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}}, false); err == nil || !strings.Contains(err.Message, "payload.prompt: required") {
		t.Errorf("no prompt: %v", err)
	}
	// the catalog has no limit on the number of parts (an admission does: MaxPromptParts)
	many := make([]any, MaxPromptParts+1)
	for i := range many {
		many[i] = TextPart("x").wire()
	}
	if _, _, err := decodePayload("input.admitted", 2, admittedWith(many), false); err != nil {
		t.Errorf("%d parts refused: %v", len(many), err)
	}
	// a string prompt reads as Text, parts as Parts
	p, _, _ := decodePayload("input.admitted", 1, admittedWith("plain"), false)
	if pr := p.(*InputAdmitted).Prompt; pr.IsParts() || pr.Text != "plain" || PromptText(pr) != "plain" {
		t.Errorf("a string prompt reads as %+v", pr)
	}
}

// PromptText is sessiond's promptText (test/input/prompt.test.ts gives the same text).
func TestPromptText(t *testing.T) {
	p := Prompt{Parts: []PromptPart{
		TextPart("look:"),
		ImageURL("https://example.com/cat.png", ""),
		ImageURL("data:image/png;base64,AAAA", ""),
		ImageBytes([]byte("12345"), "image/png"),
		FileBytes([]byte("123456"), "application/pdf", "a.pdf"),
		JSONPart(Map{{Key: "n", Value: int64(1)}}),
	}}
	want := "look:\n[image https://example.com/cat.png]\n[image data URL]\n[image image/png, 5 bytes]\n[file a.pdf application/pdf, 6 bytes]\n{\"n\":1}"
	if got := PromptText(p); got != want {
		t.Errorf("PromptText\n%q\nwant\n%q", got, want)
	}
	if p.String() != want || (Prompt{Text: "as is"}).String() != "as is" {
		t.Error("String is not PromptText")
	}
	for _, c := range []struct {
		part PromptPart
		want string
	}{
		{FileURL("https://example.com/r.csv", "text/csv", ""), "[file https://example.com/r.csv text/csv]"},
		{FileURL("https://example.com/r.csv", "text/csv", "r.csv"), "[file r.csv https://example.com/r.csv text/csv]"},
		{ImageURL("https://example.com/a.png", "image/png"), "[image https://example.com/a.png image/png]"},
		{ImageBytes(nil, "image/png"), "[image image/png, 0 bytes]"},
		{ImageBytes([]byte("1234"), "image/png"), "[image image/png, 4 bytes]"},
		{JSONPart(nil), "null"},
		{JSONPart(map[string]any{"b": 1, "a": "x"}), `{"a":"x","b":1}`},
	} {
		if got := PromptText(Prompt{Parts: []PromptPart{c.part}}); got != c.want {
			t.Errorf("%+v: %q, want %q", c.part, got, c.want)
		}
	}
	if b, err := ImageBytes([]byte{0x89, 'P', 'N', 'G'}, "image/png").Bytes(); err != nil || !bytes.Equal(b, []byte{0x89, 'P', 'N', 'G'}) {
		t.Errorf("Bytes: %x %v", b, err)
	}
}

// The admit body: Parts, when given, as a list (each part's keys in the catalog's order), else
// Prompt; Admit refuses both at once before sending.
func TestAdmitBodyWithParts(t *testing.T) {
	body := AdmitBody("ses_1", AdmitRequest{Parts: []PromptPart{
		TextPart("what is this?"),
		ImageBytes([]byte{0x89, 'P', 'N', 'G'}, "image/png"),
		FileURL("https://example.com/r.csv", "text/csv", "r.csv"),
		JSONPart(map[string]any{"order": 42, "note": nil}),
	}, ID: "inp_1"})
	text, err := EncodeRequest(VerbAdmit, body)
	want := `{"sessionId":"ses_1","prompt":[{"type":"text","text":"what is this?"},{"type":"image","data":"iVBORw==","mediaType":"image/png"},` +
		`{"type":"file","url":"https://example.com/r.csv","mediaType":"text/csv","filename":"r.csv"},{"type":"json","value":{"note":null,"order":42}}],"id":"inp_1"}`
	if err != nil || string(text) != want {
		t.Errorf("admit body %s (%v)\nwant       %s", text, err, want)
	}
	if text, _ := EncodeRequest(VerbAdmit, AdmitBody("ses_1", AdmitRequest{Prompt: "hello", Parts: []PromptPart{}})); string(text) != `{"sessionId":"ses_1","prompt":"hello"}` {
		t.Errorf("a string prompt: %s", text)
	}
	c := &Client{}
	if _, err := c.Admit(t.Context(), "ses_1", AdmitRequest{Prompt: "hello", Parts: []PromptPart{TextPart("hello")}}); ErrorCode(err) != CodeInvalidOption {
		t.Errorf("both Prompt and Parts: %v", err)
	}
}

// A stored admission of parts is read and written again byte for byte; its JSON is sessiond's.
func TestPromptRoundTrip(t *testing.T) {
	parts := []PromptPart{TextPart("a"), ImageURL("https://example.com/a.png", "image/png"), FileBytes([]byte("%PDF"), "application/pdf", "x.pdf"), JSONPart([]any{int64(1), 2.5, "x", nil, Map{{Key: "k", Value: true}}})}
	e := Event{ID: "evt_1", Type: "input.admitted", Version: 2, SessionID: "ses_1", Seq: 1, Time: 1796056745917,
		Payload: &InputAdmitted{InputID: "inp_1", Prompt: Prompt{Parts: parts}, Delivery: "queue", Wake: true, Source: "user"}}
	data, err := EncodeStoredMessage([]Event{e})
	if err != nil {
		t.Fatal(err)
	}
	events, err := DecodeStoredMessage(data, EventsSubject("ses_1"), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := events[0].Payload.(*InputAdmitted).Prompt
	if !got.IsParts() || len(got.Parts) != len(parts) || PromptText(got) != PromptText(Prompt{Parts: parts}) {
		t.Fatalf("read back as %+v", got)
	}
	if again, _ := EncodeStoredMessage(events); !bytes.Equal(again, data) {
		t.Fatalf("written again as %x, want %x", again, data)
	}
	js, err := events[0].Payload.(*InputAdmitted).Prompt.MarshalJSON()
	want := `[{"type":"text","text":"a"},{"type":"image","url":"https://example.com/a.png","mediaType":"image/png"},{"type":"file","data":"JVBERg==","mediaType":"application/pdf","filename":"x.pdf"},{"type":"json","value":[1,2.5,"x",null,{"k":true}]}]`
	if err != nil || string(js) != want {
		t.Fatalf("JSON %s (%v)\nwant %s", js, err, want)
	}
	if js, _ := (Prompt{Text: "hi"}).MarshalJSON(); string(js) != `"hi"` {
		t.Fatalf("JSON of a string prompt: %s", js)
	}
}

// samplePrompt is a prompt of every kind of part (the vectors' sample).
func samplePrompt() []PromptPart {
	return []PromptPart{
		TextPart("What is in these? — ünïcode"),
		ImageURL("https://example.com/cat.png", "image/png"),
		ImageBytes([]byte{0x89, 0x50, 0x4e, 0x47}, "image/png"),
		FileBytes([]byte("%PDF-1.4"), "application/pdf", "invoice.pdf"),
		FileURL("https://example.com/report.csv", "text/csv", ""),
		JSONPart(Map{{Key: "order", Value: int64(42)}, {Key: "lines", Value: []any{Map{{Key: "sku", Value: "A-1"}, {Key: "qty", Value: int64(2)}, {Key: "price", Value: 9.5}}}}, {Key: "note", Value: nil}}),
	}
}

func TestPromptOfPartsEndToEnd(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)
	col := &collector{}
	sub, err := c.Subscribe(ctx, s, 0, col.handle, col.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	parts := samplePrompt()
	id := "inp_" + s + "_parts"
	r, err := c.Admit(ctx, s, AdmitRequest{Parts: parts, ID: id})
	if err != nil || !r.Created || r.AdmittedSeq != 1 || r.InputID != id {
		t.Fatalf("admit: %+v %v", r, err)
	}
	want := quiet(t, w, c, s, 20*time.Second)

	// live, and from the stream: the events the Node client reads, the parts as they were sent
	sameAsStream(t, delivered(t, col, want), want, false)
	events, err := c.Replay(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	sameAsStream(t, events, want, true)
	for _, read := range [][]Event{col.committed(), events} {
		e := read[0]
		p := inputAdmitted(t, read, id)
		if e.Type != "input.admitted" || e.Version != 2 || !p.Prompt.IsParts() || p.Prompt.Text != "" {
			t.Fatalf("input.admitted %d %s", e.Version, show(p))
		}
		if got := get(payloadMap(p), "prompt"); !sameValue(got, any(partsWire(parts))) {
			t.Fatalf("prompt read back as\n%s\nsent\n%s", show(got), show(partsWire(parts)))
		}
		if got, _ := p.Prompt.Parts[2].Bytes(); !bytes.Equal(got, []byte{0x89, 0x50, 0x4e, 0x47}) {
			t.Fatalf("the image's bytes read back as %x", got)
		}
	}
	if !sameValue(get(get(want[0], "payload").(Map), "prompt"), any(partsWire(parts))) {
		t.Fatalf("the Node client reads the prompt as %s", show(get(want[0], "payload")))
	}
	// the echo worker's runner saw the prompt's text form, as PromptText writes it
	var echoed []string
	for _, text := range texts(events) {
		echoed = append(echoed, strings.Fields(strings.TrimPrefix(text, "echo: "))...)
	}
	if wantWords := strings.Fields(PromptText(Prompt{Parts: parts})); !slices.Equal(echoed, wantWords) {
		t.Fatalf("the runner echoed %q, the text form is %q", echoed, wantWords)
	}

	// the same admission again is no change, from this client or (keys in another order) the Node
	// client's; other parts under the same id are a conflict
	if again, err := c.Admit(ctx, s, AdmitRequest{Parts: parts, ID: id}); err != nil || again.Created || again.AdmittedSeq != 1 {
		t.Fatalf("admit again: %+v %v", again, err)
	}
	reordered := make([]any, len(parts))
	for i, part := range parts {
		m := part.wire()
		slices.Reverse(m)
		reordered[i] = m
	}
	if receipt := w.do(t, map[string]any{"cmd": "admit", "sessionId": s, "prompt": reordered, "id": id}); get(get(receipt, "receipt").(Map), "created") != false {
		t.Fatalf("the Node client's resend with its keys in another order: %s", show(receipt))
	}
	if _, err := c.Admit(ctx, s, AdmitRequest{Parts: parts[:1], ID: id}); ErrorCode(err) != CodeInputConflict {
		t.Fatalf("other parts under the same id: %v", err)
	}

	// refused by the worker, naming the part; and before sending
	no := false
	for _, c2 := range []struct {
		parts    []PromptPart
		mentions string
	}{
		{[]PromptPart{{Type: PartImage}}, `Invalid input: prompt part 0 ("image") is not a valid part: an image is`},
		{[]PromptPart{TextPart("ok"), {Type: PartFile, URL: "https://example.com/r.csv"}}, `prompt part 1 ("file") is not a valid part: a file is`},
		{[]PromptPart{{Type: "video", URL: "https://example.com/a.mp4"}}, `type must be "text", "image", "file" or "json"`},
		{[]PromptPart{ImageURL("ftp://example.com/a.png", "")}, `prompt part 0 ("image")`},
		{slices.Repeat([]PromptPart{TextPart("x")}, MaxPromptParts+1), "over the limit of 64"},
	} {
		_, err := c.Admit(ctx, newSession(t), AdmitRequest{Parts: c2.parts, Wake: &no})
		if ErrorCode(err) != CodeInvalidOption || !strings.Contains(err.Error(), c2.mentions) {
			t.Fatalf("admit %s: %v, want invalid_option mentioning %q", show(partsWire(c2.parts)), err, c2.mentions)
		}
	}
	if _, err := c.Admit(ctx, newSession(t), AdmitRequest{Prompt: "text", Parts: parts, Wake: &no}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("both Prompt and Parts: %v", err)
	}
}

// A part stored as a blob beside the log (the embedded log stores an image or a file over 64 KiB
// there at admission) is read, shown as a note and written back byte for byte; a malformed
// reference is not a part.
func TestBlobPartRoundTrip(t *testing.T) {
	sha := strings.Repeat("3a", 32)
	parts := []PromptPart{
		TextPart("describe this"),
		{Type: PartImage, Blob: &BlobRef{Sha256: sha, Size: 6291456, MediaType: "image/png"}},
		{Type: PartFile, Blob: &BlobRef{Sha256: sha, Size: 10, MediaType: "application/pdf"}, Filename: "a.pdf"},
	}
	e := Event{ID: "evt_1", Type: "input.admitted", Version: 2, SessionID: "ses_1", Seq: 1, Time: 1796056745917,
		Payload: &InputAdmitted{InputID: "inp_1", Prompt: Prompt{Parts: parts}, Delivery: "queue", Wake: true, Source: "user"}}
	data, err := EncodeStoredMessage([]Event{e})
	if err != nil {
		t.Fatal(err)
	}
	events, err := DecodeStoredMessage(data, EventsSubject("ses_1"), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := events[0].Payload.(*InputAdmitted).Prompt
	want := "describe this\n[image image/png, 6291456 bytes, stored as blob 3a3a3a3a3a3a]\n[file a.pdf application/pdf, 10 bytes, stored as blob 3a3a3a3a3a3a]"
	if PromptText(got) != want || got.Parts[1].Blob == nil || *got.Parts[1].Blob != *parts[1].Blob {
		t.Fatalf("read back as %q %+v", PromptText(got), got.Parts)
	}
	if again, _ := EncodeStoredMessage(events); !bytes.Equal(again, data) {
		t.Fatalf("written again as %x, want %x", again, data)
	}
	js, _ := got.MarshalJSON()
	wantJSON := `[{"type":"text","text":"describe this"},{"type":"image","blob":{"sha256":"` + sha + `","size":6291456,"mediaType":"image/png"}},` +
		`{"type":"file","blob":{"sha256":"` + sha + `","size":10,"mediaType":"application/pdf"},"filename":"a.pdf"}]`
	if string(js) != wantJSON {
		t.Fatalf("JSON %s\nwant %s", js, wantJSON)
	}
	for _, bad := range []Map{
		{{Key: "type", Value: "image"}, {Key: "blob", Value: Map{{Key: "sha256", Value: "ABC"}, {Key: "size", Value: int64(1)}, {Key: "mediaType", Value: "image/png"}}}},
		{{Key: "type", Value: "image"}, {Key: "blob", Value: Map{{Key: "sha256", Value: sha}, {Key: "size", Value: int64(-1)}, {Key: "mediaType", Value: "image/png"}}}},
		{{Key: "type", Value: "image"}, {Key: "blob", Value: Map{{Key: "sha256", Value: sha}, {Key: "size", Value: int64(1)}}}},
		{{Key: "type", Value: "image"}, {Key: "blob", Value: Map{{Key: "sha256", Value: sha}, {Key: "size", Value: int64(1)}, {Key: "mediaType", Value: "image/png"}}}, {Key: "mediaType", Value: "image/png"}},
	} {
		if _, why := decodePart(bad); why == "" {
			t.Errorf("accepted %s", show(bad))
		}
	}
}
