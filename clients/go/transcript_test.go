package sessiond

// session.forked checked as sessiond's catalog checks it (the same verdicts, and the same cleaned
// payload, as its zod schema gives these), and its typed transcript.

import (
	"encoding/json"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"maps"
	"testing"
)

// forkedVerdicts: session.forked payloads (JSON text), and what sessiond's catalog reads each as
// ("" when it refuses it). Unknown keys are dropped at every level but a prompt part's, and keys
// are written in the catalog's order.
var forkedVerdicts = []struct{ payload, reads string }{
	{`{"from":{"sessionId":"ses_a","seq":1},"transcript":[]}`, `{"from":{"sessionId":"ses_a","seq":1},"transcript":[]}`},
	{`{"from":{"sessionId":"ses_a","seq":3},"transcript":[],"tags":{}}`, `{"from":{"sessionId":"ses_a","seq":3},"transcript":[],"tags":{}}`},
	{`{"extra":1,"tags":{"branch":"alt"},"transcript":[{"summary":"s","executionId":"e","type":"summary","messageId":"m","text":"dropped"}],"from":{"seq":12,"x":true,"sessionId":"ses_a"}}`,
		`{"from":{"sessionId":"ses_a","seq":12},"transcript":[{"type":"summary","messageId":"m","executionId":"e","summary":"s"}],"tags":{"branch":"alt"}}`},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"hi","zzz":1,"delivery":"steer","parts":[],"continues":{"executionId":"e0","reason":"resumed","phase":"safe","inputIds":["i0"],"assistantMessageId":null,"retryTools":[{"callId":"c","messageId":"m","name":"t","idempotencyKey":"k","extra":2}],"more":3}}]}`,
		`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"hi","parts":[],"delivery":"steer","continues":{"executionId":"e0","reason":"resumed","phase":"safe","inputIds":["i0"],"assistantMessageId":null,"retryTools":[{"callId":"c","messageId":"m","name":"t","idempotencyKey":"k"}]}}]}`},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"[image https://example.com/a.png]","parts":[{"type":"image","url":"https://example.com/a.png"}]}]}`,
		`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"[image https://example.com/a.png]","parts":[{"type":"image","url":"https://example.com/a.png"}]}]}`},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"failed","parts":[{"text":"thinking","partId":"p1","type":"reasoning","extra":1},{"type":"tool","callId":"c","name":"n","input":null,"durable":false,"state":"denied","decision":{"outcome":"denied","reason":"no","y":1},"error":{"type":"denied","message":"m","z":1},"w":2}],"error":{"type":"boom","message":"failed","name":"Error"},"usage":{"inputTokens":1,"outputTokens":2,"cached":3},"finish":"error"}]}`,
		`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"failed","parts":[{"type":"reasoning","partId":"p1","text":"thinking"},{"type":"tool","callId":"c","name":"n","input":null,"durable":false,"state":"denied","error":{"type":"denied","message":"m"},"decision":{"outcome":"denied","reason":"no"}}],"finish":"error","error":{"type":"boom","message":"failed","name":"Error"},"usage":{"inputTokens":1,"outputTokens":2}}]}`},

	// a tool part's input is required (null is an input); a prompt part is a strict object
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"completed","parts":[{"type":"tool","callId":"c","name":"n","durable":false,"state":"called"}]}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"hi","parts":[{"type":"text","text":"hi","extra":1}]}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e","text":"hi","delivery":"later"}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"user","inputId":"i","executionId":"e"}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"system","messageId":"m","executionId":"e","summary":"s"}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"messageId":"m","executionId":"e","summary":"s"}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"done","parts":[]}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running"}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"tool","partId":"p","text":"t"}]}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"image","partId":"p","text":"t"}]}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"tool","callId":"c","name":"n","input":1,"durable":true,"state":"waiting"}]}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"tool","callId":"c","name":"","input":1,"durable":true,"state":"running"}]}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"assistant","messageId":"m","executionId":"e","status":"running","parts":[{"type":"tool","callId":"c","name":"n","input":1,"durable":true,"state":"cancelled","decision":{"outcome":"delivered"}}]}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":9},"transcript":[{"type":"summary","messageId":"","executionId":"e","summary":"s"}]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":0},"transcript":[]}`, ``},
	{`{"from":{"sessionId":"ses_a"},"transcript":[]}`, ``},
	{`{"transcript":[]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":1}}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":1},"transcript":{}}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":1},"transcript":[null]}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":1},"transcript":[],"tags":{"bad key":"v"}}`, ``},
	{`{"from":{"sessionId":"ses_a","seq":1.5},"transcript":[]}`, ``},
}

func TestSessionForkedChecks(t *testing.T) {
	for _, c := range forkedVerdicts {
		v, err := wire.ParseJSON([]byte(c.payload))
		if err != nil {
			t.Fatal(err)
		}
		p, _, derr := decodePayload("session.forked", 1, v, false)
		if c.reads == "" {
			if derr == nil || derr.Code != CodeInvalidPayload {
				t.Errorf("accepted %s (%v)", c.payload, derr)
			}
			continue
		}
		if derr != nil {
			t.Errorf("refused %s: %v", c.payload, derr)
			continue
		}
		want, _ := wire.ParseJSON([]byte(c.reads))
		if got := payloadMap(p); !sameValue(got, want) {
			t.Errorf("%s\nreads as %s\nwant     %s", c.payload, show(got), c.reads)
		}
		// encoding/json writes the items and parts as sessiond does too
		b, err := json.Marshal(p)
		if again, _ := wire.ParseJSON(b); err != nil || !sameUnordered(again, want) {
			t.Errorf("json.Marshal %s (%v), want %s", b, err, c.reads)
		}
	}
}

// The vectors' session.forked, as its typed transcript.
func TestSessionForkedTyped(t *testing.T) {
	var payload any
	for _, c := range cases(t, loadJSON(t, "vectors", "msgpack.json")) {
		if str(c, "name") == "live committed session.forked" {
			payload = get(get(c, "value").(Map), "payload")
		}
	}
	p, _, err := decodePayload("session.forked", 1, payload, false)
	if err != nil {
		t.Fatal(err)
	}
	f := p.(*SessionForked)
	if f.From != (ForkPoint{"ses_source", 12}) || !maps.Equal(f.Tags, Tags{"customer": "acme"}) || len(f.Transcript) != 3 {
		t.Fatalf("%s", show(f))
	}
	summary, ok := f.Transcript[0].(*TranscriptSummary)
	if !ok || summary.ItemType() != "summary" || summary.Summary != "They talked about invoices." || summary.MessageID != "msg_sum" {
		t.Fatalf("item 0: %s", show(f.Transcript[0]))
	}
	user, ok := f.Transcript[1].(*TranscriptUser)
	if !ok || user.InputID != "inp_s1" || user.ExecutionID != "exe_source_2" || user.Text != "send it to bob" || user.Parts != nil ||
		user.Delivery == nil || *user.Delivery != "queue" || user.Continues != nil {
		t.Fatalf("item 1: %s", show(f.Transcript[1]))
	}
	a, ok := f.Transcript[2].(*TranscriptAssistant)
	if !ok || a.Status != "completed" || len(a.Parts) != 2 || a.Finish == nil || *a.Finish != "stop" || a.Usage == nil || *a.Usage != (Usage{InputTokens: 100, OutputTokens: 20}) || a.Error != nil {
		t.Fatalf("item 2: %s", show(f.Transcript[2]))
	}
	text, ok := a.Parts[0].(*TranscriptText)
	if !ok || text.PartType() != "text" || text.PartID != "prt_s1" || text.Text != "Sending — ünïcode." {
		t.Fatalf("part 0: %s", show(a.Parts[0]))
	}
	tool, ok := a.Parts[1].(*TranscriptTool)
	if !ok || tool.PartType() != "tool" || tool.Name != "send_invoice" || !tool.Durable || tool.State != "succeeded" || tool.IdempotencyKey == nil ||
		!sameValue(tool.Input.Value, Map{{Key: "to", Value: "bob"}}) || !sameValue(tool.Output.Value, Map{{Key: "ok", Value: true}}) || tool.Error != nil || tool.Decision != nil {
		t.Fatalf("part 1: %s", show(a.Parts[1]))
	}
	// built by hand, it is written as sessiond writes it
	queue := "queue"
	built := &SessionForked{From: ForkPoint{"ses_source", 12}, Tags: Tags{"customer": "acme"}, Transcript: []TranscriptItem{
		&TranscriptSummary{MessageID: "msg_sum", ExecutionID: "exe_source_1", Summary: "They talked about invoices."},
		&TranscriptUser{InputID: "inp_s1", ExecutionID: "exe_source_2", Text: "send it to bob", Delivery: &queue},
		a,
	}}
	want, _ := wire.EncodeMsgpack(payload)
	if got, err := wire.EncodeMsgpack(built); err != nil || string(got) != string(want) {
		t.Fatalf("built %x (%v)\nwant  %x", got, err, want)
	}
}
