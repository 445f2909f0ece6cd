package sessiond

import (
	"bytes"
	"encoding/hex"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"math"
	"strings"
	"testing"
)

// The canonical msgpack's integer forms at each boundary, and the int64 rule.
func TestMsgpackIntegers(t *testing.T) {
	for _, c := range []struct {
		v   any
		hex string
	}{
		{int64(0), "00"}, {int64(127), "7f"}, {int64(128), "cc80"}, {int64(255), "ccff"}, {int64(256), "cd0100"},
		{int64(65535), "cdffff"}, {int64(65536), "ce00010000"}, {int64(math.MaxUint32), "ceffffffff"},
		{int64(math.MaxUint32 + 1), "d30000000100000000"}, {uint64(1796056745917), "d3000001a22d5307bd"},
		{int64(-1), "ff"}, {int64(-32), "e0"}, {int64(-33), "d0df"}, {int64(-128), "d080"}, {int64(-129), "d1ff7f"},
		{int64(-32768), "d18000"}, {int64(-32769), "d2ffff7fff"}, {int64(math.MinInt32), "d280000000"},
		{int64(math.MinInt32 - 1), "d3ffffffff7fffffff"},
		{float64(3), "03"}, {float64(-0.0), "00"}, {1796056745917.0, "d3000001a22d5307bd"}, {0.5, "cb3fe0000000000000"},
		{float64(1 << 60), "cb43b0000000000000"}, // beyond 2^53 a float stays a float, as in JavaScript
		{uint64(math.MaxUint64), "cfffffffffffffffff"},
	} {
		got, err := wire.EncodeMsgpack(c.v)
		if err != nil || hex.EncodeToString(got) != c.hex {
			t.Errorf("%v (%T): %x %v, want %s", c.v, c.v, got, err, c.hex)
		}
		back, err := wire.DecodeMsgpack(got)
		if err != nil || !sameValue(back, c.v) {
			t.Errorf("%v reads back as %v %v", c.v, back, err)
		}
	}
}

func TestMsgpackHeaders(t *testing.T) {
	for _, c := range []struct {
		n      int
		prefix string
	}{{31, "bf"}, {32, "d920"}, {255, "d9ff"}, {256, "da0100"}, {65536, "db00010000"}} {
		got, _ := wire.EncodeMsgpack(strings.Repeat("a", c.n))
		if !strings.HasPrefix(hex.EncodeToString(got), c.prefix) || len(got) != c.n+len(c.prefix)/2 {
			t.Errorf("string of %d: %x...", c.n, got[:6])
		}
	}
	arr := make([]any, 16)
	for i := range arr {
		arr[i] = int64(0)
	}
	if got, _ := wire.EncodeMsgpack(arr[:15]); got[0] != 0x9f {
		t.Errorf("array of 15: %x", got[0])
	}
	if got, _ := wire.EncodeMsgpack(arr); !bytes.HasPrefix(got, []byte{0xdc, 0, 16}) {
		t.Errorf("array of 16: %x", got[:3])
	}
	m := Map{}
	for i := 0; i < 16; i++ {
		m = append(m, MapEntry{Key: string(rune('a' + i)), Value: int64(i)})
	}
	if got, _ := wire.EncodeMsgpack(m[:15]); got[0] != 0x8f {
		t.Errorf("map of 15: %x", got[0])
	}
	if got, _ := wire.EncodeMsgpack(m); !bytes.HasPrefix(got, []byte{0xde, 0, 16}) {
		t.Errorf("map of 16: %x", got[:3])
	}
	// keys stay in order
	got, _ := wire.EncodeMsgpack(Map{{Key: "z", Value: int64(1)}, {Key: "a", Value: int64(2)}})
	if hex.EncodeToString(got) != "82a17a01a16102" {
		t.Errorf("key order: %x", got)
	}
}

func TestMsgpackRefusals(t *testing.T) {
	for name, h := range map[string]string{
		"a reserved byte":               "c1",
		"truncated":                     "92a3",
		"bytes after the value":         "0101",
		"an ext type":                   "d40100",
		"a map key not a string":        "810102",
		"an array longer than the data": "dd0000ffff",
	} {
		data, _ := hex.DecodeString(h)
		if _, err := wire.DecodeMsgpack(data); err == nil {
			t.Errorf("%s (%s) was accepted", name, h)
		}
	}
}

// JSON as JavaScript's JSON.stringify writes it.
func TestJSONText(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{"<b>&</b>", `"<b>&</b>"`},
		{"line\u2028para\u2029", "\"line\u2028para\u2029\""},
		{"\b\f\n\r\t\x01\x1f\x7f", `"\b\f\n\r\t\u0001\u001f` + "\x7f\""},
		{`"quoted" \ back`, `"\"quoted\" \\ back"`},
		{"Zoë 😀 日本", `"Zoë 😀 日本"`},
		{"lone \xed\xa0\x80 surrogate", `"lone \ud800 surrogate"`},
	} {
		got, err := wire.AppendJSON(nil, c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("%q: %s %v, want %s", c.in, got, err, c.want)
		}
	}
	if _, err := wire.AppendJSON(nil, "bad \xff"); err == nil {
		t.Error("invalid UTF-8 was written")
	}
	for in, want := range map[float64]string{0.1: "0.1", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-7: "1e-7", -2.5: "-2.5", math.NaN(): "null"} {
		if got, _ := wire.AppendJSON(nil, in); string(got) != want {
			t.Errorf("%v: %s, want %s", in, got, want)
		}
	}
	// parsing keeps key order, integers, and lone surrogates (written back as they came)
	v, err := wire.ParseJSON([]byte(` {"b":1,"a":[true,null,2.5,"\ud83d\ude00","\udc00x"],"b":3} `))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := wire.AppendJSON(nil, v)
	if string(out) != `{"b":3,"a":[true,null,2.5,"😀","\udc00x"]}` {
		t.Errorf("round trip: %s", out)
	}
	for _, bad := range []string{`{"a":}`, `[1,]`, `01`, `"\x"`, `{"a":1} x`, "\"a\x01\""} {
		if _, err := wire.ParseJSON([]byte(bad)); err == nil {
			t.Errorf("%q was parsed", bad)
		}
	}
}

// KeepUnknown keeps a type or version this client does not know, with its fields as they came.
func TestKeepUnknown(t *testing.T) {
	frame := Map{{Key: "id", Value: "evt_1"}, {Key: "type", Value: "future.thing"}, {Key: "version", Value: int64(1)}, {Key: "sessionId", Value: "ses_1"}, {Key: "seq", Value: int64(1)},
		{Key: "time", Value: int64(1796056745917)}, {Key: "payload", Value: Map{{Key: "b", Value: int64(2)}, {Key: "a", Value: "x"}}}}
	data, _ := wire.EncodeMsgpack([]any{frame})
	if _, err := DecodeStoredMessage(data, "sessiond.events.ses_1", 3, 0); ErrorCode(err) != CodeUnknownEventType {
		t.Fatalf("strict: %v", err)
	}
	events, err := DecodeStoredMessage(data, "sessiond.events.ses_1", 3, 0, KeepUnknown())
	if err != nil || len(events) != 1 {
		t.Fatal(err)
	}
	u, ok := events[0].Payload.(*UnknownPayload)
	if !ok || u.Type != "future.thing" || u.Version != 1 || !sameValue(u.Fields, get(frame, "payload")) {
		t.Fatalf("payload %#v", events[0].Payload)
	}
	if again, _ := EncodeStoredMessage(events); !bytes.Equal(again, data) {
		t.Fatalf("re-encoded %x, want %x", again, data)
	}
	// a newer version of a known type
	frame[1].Value, frame[2].Value = "execution.started", int64(2)
	data, _ = wire.EncodeMsgpack([]any{frame})
	if _, err := DecodeStoredMessage(data, "sessiond.events.ses_1", 3, 0); ErrorCode(err) != CodeUnsupportedEventVersion {
		t.Fatalf("strict: %v", err)
	}
	events, err = DecodeStoredMessage(data, "sessiond.events.ses_1", 3, 0, KeepUnknown())
	if err != nil || events[0].Version != 2 || events[0].Payload.(*UnknownPayload).Version != 2 {
		t.Fatalf("%+v %v", events, err)
	}
}

// The typed payloads check what sessiond's schemas check.
func TestPayloadChecks(t *testing.T) {
	ok := func(typ string, payload Map) {
		t.Helper()
		if _, _, err := decodePayload(typ, 1, payload, false); err != nil {
			t.Errorf("%s %s refused: %v", typ, show(payload), err)
		}
	}
	bad := func(typ string, payload any) {
		t.Helper()
		if _, _, err := decodePayload(typ, 1, payload, false); err == nil || err.Code != CodeInvalidPayload {
			t.Errorf("%s %s accepted (%v)", typ, show(payload), err)
		}
	}
	ok("execution.claimed", Map{{Key: "executionId", Value: "e"}, {Key: "ownerId", Value: "o"}, {Key: "expiresAt", Value: 1796056775917.0}, {Key: "leaseMs", Value: int64(1)}, {Key: "assistantSeq", Value: int64(-1)}, {Key: "extra", Value: "dropped"}})
	bad("execution.claimed", Map{{Key: "executionId", Value: "e"}, {Key: "ownerId", Value: "o"}, {Key: "expiresAt", Value: int64(1)}, {Key: "leaseMs", Value: int64(0)}, {Key: "assistantSeq", Value: int64(-1)}})
	bad("execution.claimed", Map{{Key: "executionId", Value: "e"}, {Key: "ownerId", Value: "o"}, {Key: "expiresAt", Value: 1.5}, {Key: "leaseMs", Value: int64(1)}, {Key: "assistantSeq", Value: int64(-1)}})
	bad("execution.claimed", Map{{Key: "executionId", Value: "e"}, {Key: "ownerId", Value: "o"}, {Key: "expiresAt", Value: int64(1) << 54}, {Key: "leaseMs", Value: int64(1)}, {Key: "assistantSeq", Value: int64(-1)}})
	bad("execution.started", Map{{Key: "executionId", Value: strings.Repeat("x", 129)}})
	ok("execution.started", Map{{Key: "executionId", Value: strings.Repeat("😀", 64)}}) // 64 characters (lengths_test.go has the limits)
	bad("execution.started", Map{{Key: "executionId", Value: ""}})
	bad("execution.started", nil)
	bad("execution.cancelled", Map{{Key: "executionId", Value: "e"}, {Key: "reason", Value: nil}})
	bad("execution.cancelled", Map{{Key: "executionId", Value: "e"}, {Key: "reason", Value: strings.Repeat("r", 1001)}})
	bad("execution.phase", Map{{Key: "executionId", Value: "e"}, {Key: "phase", Value: "maybe"}})
	bad("input.dropped", Map{{Key: "inputIds", Value: []any{}}})
	bad("input.dropped", Map{{Key: "inputIds", Value: []any{""}}})
	ok("recovery.completed", Map{{Key: "executionId", Value: "e"}, {Key: "assistantMessageId", Value: nil}, {Key: "continuationInputId", Value: nil}, {Key: "phase", Value: "safe"}})
	bad("recovery.completed", Map{{Key: "executionId", Value: "e"}, {Key: "continuationInputId", Value: nil}, {Key: "phase", Value: "safe"}})
	ok("tool.called", Map{{Key: "executionId", Value: "e"}, {Key: "messageId", Value: "m"}, {Key: "callId", Value: "c"}, {Key: "name", Value: "n"}, {Key: "input", Value: nil}, {Key: "durable", Value: false}})
	bad("step.failed", Map{{Key: "executionId", Value: "e"}, {Key: "messageId", Value: "m"}, {Key: "error", Value: Map{{Key: "type", Value: ""}, {Key: "message", Value: "m"}}}})
	bad("text.completed", Map{{Key: "executionId", Value: "e"}, {Key: "messageId", Value: "m"}, {Key: "partId", Value: "p"}, {Key: "text", Value: []byte("bin")}})
	ok("execution.settled", Map{{Key: "executionId", Value: "e"}, {Key: "outcome", Value: "waiting"}})
	bad("execution.settled", Map{{Key: "executionId", Value: "e"}, {Key: "outcome", Value: "paused"}})
	ok("input.admitted", Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "notBefore", Value: int64(1796056745917)}})
	bad("input.admitted", Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "notBefore", Value: int64(-1)}})
	bad("input.admitted", Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "notBefore", Value: 1.5}})
	ok("input.admitted", Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "tags", Value: Map{{Key: "customer", Value: "acme"}, {Key: "env/region", Value: strings.Repeat("😀", 128)}}}})
	ok("input.admitted", Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "tags", Value: Map{}}})
	bad("input.admitted", Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "tags", Value: Map{{Key: "customer", Value: nil}}}})
	bad("input.admitted", Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "tags", Value: Map{{Key: "customer", Value: ""}}}})
	bad("input.admitted", Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "tags", Value: Map{{Key: "customer", Value: strings.Repeat("v", 257)}}}})
	bad("input.admitted", Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "tags", Value: []any{"customer"}}})
	ok("session.tagged", Map{{Key: "tags", Value: Map{{Key: "customer", Value: "acme"}, {Key: "tier", Value: nil}}}})
	ok("session.tagged", Map{{Key: "tags", Value: Map{{Key: strings.Repeat("k", 64), Value: "v"}}}})
	bad("session.tagged", Map{})
	bad("session.tagged", Map{{Key: "tags", Value: Map{{Key: "bad key", Value: "v"}}}})
	bad("session.tagged", Map{{Key: "tags", Value: Map{{Key: "_lead", Value: "v"}}}})
	bad("session.tagged", Map{{Key: "tags", Value: Map{{Key: strings.Repeat("k", 65), Value: "v"}}}})
	bad("session.tagged", Map{{Key: "tags", Value: Map{{Key: "tier", Value: int64(1)}}}})
	ok("wait.started", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "timer"}, {Key: "name", Value: "sleep-1"}, {Key: "until", Value: int64(1796056745917)}})
	ok("wait.started", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "approval"}, {Key: "name", Value: "c"}, {Key: "messageId", Value: "m"}, {Key: "callId", Value: "c"}, {Key: "tool", Value: "t"}, {Key: "input", Value: nil}})
	ok("wait.started", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "signal"}, {Key: "name", Value: strings.Repeat("😀", 100)}}) // 100 characters
	bad("wait.started", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "signal"}, {Key: "name", Value: strings.Repeat("n", 201)}})
	bad("wait.started", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "signal"}, {Key: "name", Value: ""}})
	bad("wait.started", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "nap"}, {Key: "name", Value: "n"}})
	bad("wait.started", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "approval"}, {Key: "name", Value: "c"}, {Key: "tool", Value: ""}})
	bad("wait.started", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "timer"}, {Key: "name", Value: "sleep-1"}, {Key: "until", Value: int64(-1)}})
	ok("wait.resolved", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "signal"}, {Key: "name", Value: "n"}, {Key: "outcome", Value: "delivered"}, {Key: "data", Value: Map{{Key: "a", Value: int64(1)}}}})
	ok("wait.resolved", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "approval"}, {Key: "name", Value: "c"}, {Key: "outcome", Value: "denied"}, {Key: "messageId", Value: "m"}, {Key: "callId", Value: "c"}, {Key: "reason", Value: "no"}})
	bad("wait.resolved", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "signal"}, {Key: "name", Value: "n"}})
	bad("wait.resolved", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "signal"}, {Key: "name", Value: "n"}, {Key: "outcome", Value: "maybe"}})
	bad("wait.resolved", Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "approval"}, {Key: "name", Value: "c"}, {Key: "outcome", Value: "denied"}, {Key: "reason", Value: strings.Repeat("r", 1001)}})

	// a default applies, and an input's null is kept apart from no input
	p, _, _ := decodePayload("input.admitted", 1, Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}}, false)
	if p.(*InputAdmitted).Source != "user" {
		t.Errorf("source %q", p.(*InputAdmitted).Source)
	}
	withNull, _, _ := decodePayload("tool.called", 1, Map{{Key: "executionId", Value: "e"}, {Key: "messageId", Value: "m"}, {Key: "callId", Value: "c"}, {Key: "name", Value: "n"}, {Key: "input", Value: nil}, {Key: "durable", Value: false}}, false)
	without, _, _ := decodePayload("tool.called", 1, Map{{Key: "executionId", Value: "e"}, {Key: "messageId", Value: "m"}, {Key: "callId", Value: "c"}, {Key: "name", Value: "n"}, {Key: "durable", Value: false}}, false)
	if !withNull.(*ToolCalled).Input.Set || without.(*ToolCalled).Input.Set {
		t.Error("input null and input absent read the same")
	}
	if _, has := payloadMap(without).Get("input"); has {
		t.Error("an absent input is written")
	}
	// tags: a removal (nil) is written as null, keys sorted; no tags on an admission are written as none
	tagged, _, err := decodePayload("session.tagged", 1, Map{{Key: "tags", Value: Map{{Key: "tier", Value: nil}, {Key: "customer", Value: "acme"}}}}, false)
	if err != nil || tagged.(*SessionTagged).Tags["tier"] != nil || *tagged.(*SessionTagged).Tags["customer"] != "acme" ||
		!sameValue(payloadMap(tagged), Map{{Key: "tags", Value: Map{{Key: "customer", Value: "acme"}, {Key: "tier", Value: nil}}}}) {
		t.Errorf("session.tagged reads as %s (%v)", show(payloadMap(tagged)), err)
	}
	if _, has := payloadMap(p).Get("tags"); has {
		t.Error("an admission without tags is written with tags")
	}
	// a signal's value: absent, null and a value are three things, and each is written as it came
	for _, data := range []Map{{}, {{Key: "data", Value: nil}}, {{Key: "data", Value: Map{{Key: "amount", Value: 12.5}}}}} {
		payload := append(Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "signal"}, {Key: "name", Value: "n"}, {Key: "outcome", Value: "delivered"}}, data...)
		p, _, err := decodePayload("wait.resolved", 1, payload, false)
		if err != nil || p.(*WaitResolved).Data.Set != (len(data) == 1) || !sameValue(payloadMap(p), payload) {
			t.Errorf("wait.resolved %s reads as %s (%v)", show(payload), show(payloadMap(p)), err)
		}
	}
}
