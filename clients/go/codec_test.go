package sessiond

import (
	"bytes"
	"encoding/hex"
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
		got, err := EncodeMsgpack(c.v)
		if err != nil || hex.EncodeToString(got) != c.hex {
			t.Errorf("%v (%T): %x %v, want %s", c.v, c.v, got, err, c.hex)
		}
		back, err := DecodeMsgpack(got)
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
		got, _ := EncodeMsgpack(strings.Repeat("a", c.n))
		if !strings.HasPrefix(hex.EncodeToString(got), c.prefix) || len(got) != c.n+len(c.prefix)/2 {
			t.Errorf("string of %d: %x...", c.n, got[:6])
		}
	}
	arr := make([]any, 16)
	for i := range arr {
		arr[i] = int64(0)
	}
	if got, _ := EncodeMsgpack(arr[:15]); got[0] != 0x9f {
		t.Errorf("array of 15: %x", got[0])
	}
	if got, _ := EncodeMsgpack(arr); !bytes.HasPrefix(got, []byte{0xdc, 0, 16}) {
		t.Errorf("array of 16: %x", got[:3])
	}
	m := Map{}
	for i := 0; i < 16; i++ {
		m = append(m, MapEntry{string(rune('a' + i)), int64(i)})
	}
	if got, _ := EncodeMsgpack(m[:15]); got[0] != 0x8f {
		t.Errorf("map of 15: %x", got[0])
	}
	if got, _ := EncodeMsgpack(m); !bytes.HasPrefix(got, []byte{0xde, 0, 16}) {
		t.Errorf("map of 16: %x", got[:3])
	}
	// keys stay in order
	got, _ := EncodeMsgpack(Map{{"z", int64(1)}, {"a", int64(2)}})
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
		if _, err := DecodeMsgpack(data); err == nil {
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
		got, err := AppendJSON(nil, c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("%q: %s %v, want %s", c.in, got, err, c.want)
		}
	}
	if _, err := AppendJSON(nil, "bad \xff"); err == nil {
		t.Error("invalid UTF-8 was written")
	}
	for in, want := range map[float64]string{0.1: "0.1", 1e21: "1e+21", 1e20: "100000000000000000000", 1e-7: "1e-7", -2.5: "-2.5", math.NaN(): "null"} {
		if got, _ := AppendJSON(nil, in); string(got) != want {
			t.Errorf("%v: %s, want %s", in, got, want)
		}
	}
	// parsing keeps key order, integers, and lone surrogates (written back as they came)
	v, err := ParseJSON([]byte(` {"b":1,"a":[true,null,2.5,"\ud83d\ude00","\udc00x"],"b":3} `))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := AppendJSON(nil, v)
	if string(out) != `{"b":3,"a":[true,null,2.5,"😀","\udc00x"]}` {
		t.Errorf("round trip: %s", out)
	}
	for _, bad := range []string{`{"a":}`, `[1,]`, `01`, `"\x"`, `{"a":1} x`, "\"a\x01\""} {
		if _, err := ParseJSON([]byte(bad)); err == nil {
			t.Errorf("%q was parsed", bad)
		}
	}
}

// KeepUnknown keeps a type or version this client does not know, with its fields as they came.
func TestKeepUnknown(t *testing.T) {
	frame := Map{{"id", "evt_1"}, {"type", "future.thing"}, {"version", int64(1)}, {"sessionId", "ses_1"}, {"seq", int64(1)},
		{"time", int64(1796056745917)}, {"payload", Map{{"b", int64(2)}, {"a", "x"}}}}
	data, _ := EncodeMsgpack([]any{frame})
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
	data, _ = EncodeMsgpack([]any{frame})
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
	ok("execution.claimed", Map{{"executionId", "e"}, {"ownerId", "o"}, {"expiresAt", 1796056775917.0}, {"leaseMs", int64(1)}, {"assistantSeq", int64(-1)}, {"extra", "dropped"}})
	bad("execution.claimed", Map{{"executionId", "e"}, {"ownerId", "o"}, {"expiresAt", int64(1)}, {"leaseMs", int64(0)}, {"assistantSeq", int64(-1)}})
	bad("execution.claimed", Map{{"executionId", "e"}, {"ownerId", "o"}, {"expiresAt", 1.5}, {"leaseMs", int64(1)}, {"assistantSeq", int64(-1)}})
	bad("execution.claimed", Map{{"executionId", "e"}, {"ownerId", "o"}, {"expiresAt", int64(1) << 54}, {"leaseMs", int64(1)}, {"assistantSeq", int64(-1)}})
	bad("execution.started", Map{{"executionId", strings.Repeat("x", 129)}})
	ok("execution.started", Map{{"executionId", strings.Repeat("😀", 64)}}) // 64 characters (lengths_test.go has the limits)
	bad("execution.started", Map{{"executionId", ""}})
	bad("execution.started", nil)
	bad("execution.cancelled", Map{{"executionId", "e"}, {"reason", nil}})
	bad("execution.cancelled", Map{{"executionId", "e"}, {"reason", strings.Repeat("r", 1001)}})
	bad("execution.phase", Map{{"executionId", "e"}, {"phase", "maybe"}})
	bad("input.dropped", Map{{"inputIds", []any{}}})
	bad("input.dropped", Map{{"inputIds", []any{""}}})
	ok("recovery.completed", Map{{"executionId", "e"}, {"assistantMessageId", nil}, {"continuationInputId", nil}, {"phase", "safe"}})
	bad("recovery.completed", Map{{"executionId", "e"}, {"continuationInputId", nil}, {"phase", "safe"}})
	ok("tool.called", Map{{"executionId", "e"}, {"messageId", "m"}, {"callId", "c"}, {"name", "n"}, {"input", nil}, {"durable", false}})
	bad("step.failed", Map{{"executionId", "e"}, {"messageId", "m"}, {"error", Map{{"type", ""}, {"message", "m"}}}})
	bad("text.completed", Map{{"executionId", "e"}, {"messageId", "m"}, {"partId", "p"}, {"text", []byte("bin")}})
	ok("execution.settled", Map{{"executionId", "e"}, {"outcome", "waiting"}})
	bad("execution.settled", Map{{"executionId", "e"}, {"outcome", "paused"}})
	ok("input.admitted", Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}, {"notBefore", int64(1796056745917)}})
	bad("input.admitted", Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}, {"notBefore", int64(-1)}})
	bad("input.admitted", Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}, {"notBefore", 1.5}})
	ok("input.admitted", Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}, {"tags", Map{{"customer", "acme"}, {"env/region", strings.Repeat("😀", 128)}}}})
	ok("input.admitted", Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}, {"tags", Map{}}})
	bad("input.admitted", Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}, {"tags", Map{{"customer", nil}}}})
	bad("input.admitted", Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}, {"tags", Map{{"customer", ""}}}})
	bad("input.admitted", Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}, {"tags", Map{{"customer", strings.Repeat("v", 257)}}}})
	bad("input.admitted", Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}, {"tags", []any{"customer"}}})
	ok("session.tagged", Map{{"tags", Map{{"customer", "acme"}, {"tier", nil}}}})
	ok("session.tagged", Map{{"tags", Map{{strings.Repeat("k", 64), "v"}}}})
	bad("session.tagged", Map{})
	bad("session.tagged", Map{{"tags", Map{{"bad key", "v"}}}})
	bad("session.tagged", Map{{"tags", Map{{"_lead", "v"}}}})
	bad("session.tagged", Map{{"tags", Map{{strings.Repeat("k", 65), "v"}}}})
	bad("session.tagged", Map{{"tags", Map{{"tier", int64(1)}}}})
	ok("wait.started", Map{{"executionId", "e"}, {"kind", "timer"}, {"name", "sleep-1"}, {"until", int64(1796056745917)}})
	ok("wait.started", Map{{"executionId", "e"}, {"kind", "approval"}, {"name", "c"}, {"messageId", "m"}, {"callId", "c"}, {"tool", "t"}, {"input", nil}})
	ok("wait.started", Map{{"executionId", "e"}, {"kind", "signal"}, {"name", strings.Repeat("😀", 100)}}) // 100 characters
	bad("wait.started", Map{{"executionId", "e"}, {"kind", "signal"}, {"name", strings.Repeat("n", 201)}})
	bad("wait.started", Map{{"executionId", "e"}, {"kind", "signal"}, {"name", ""}})
	bad("wait.started", Map{{"executionId", "e"}, {"kind", "nap"}, {"name", "n"}})
	bad("wait.started", Map{{"executionId", "e"}, {"kind", "approval"}, {"name", "c"}, {"tool", ""}})
	bad("wait.started", Map{{"executionId", "e"}, {"kind", "timer"}, {"name", "sleep-1"}, {"until", int64(-1)}})
	ok("wait.resolved", Map{{"executionId", "e"}, {"kind", "signal"}, {"name", "n"}, {"outcome", "delivered"}, {"data", Map{{"a", int64(1)}}}})
	ok("wait.resolved", Map{{"executionId", "e"}, {"kind", "approval"}, {"name", "c"}, {"outcome", "denied"}, {"messageId", "m"}, {"callId", "c"}, {"reason", "no"}})
	bad("wait.resolved", Map{{"executionId", "e"}, {"kind", "signal"}, {"name", "n"}})
	bad("wait.resolved", Map{{"executionId", "e"}, {"kind", "signal"}, {"name", "n"}, {"outcome", "maybe"}})
	bad("wait.resolved", Map{{"executionId", "e"}, {"kind", "approval"}, {"name", "c"}, {"outcome", "denied"}, {"reason", strings.Repeat("r", 1001)}})

	// a default applies, and an input's null is kept apart from no input
	p, _, _ := decodePayload("input.admitted", 1, Map{{"inputId", "i"}, {"prompt", "p"}, {"delivery", "queue"}, {"wake", true}}, false)
	if p.(*InputAdmitted).Source != "user" {
		t.Errorf("source %q", p.(*InputAdmitted).Source)
	}
	withNull, _, _ := decodePayload("tool.called", 1, Map{{"executionId", "e"}, {"messageId", "m"}, {"callId", "c"}, {"name", "n"}, {"input", nil}, {"durable", false}}, false)
	without, _, _ := decodePayload("tool.called", 1, Map{{"executionId", "e"}, {"messageId", "m"}, {"callId", "c"}, {"name", "n"}, {"durable", false}}, false)
	if !withNull.(*ToolCalled).Input.Set || without.(*ToolCalled).Input.Set {
		t.Error("input null and input absent read the same")
	}
	if _, has := PayloadMap(without).Get("input"); has {
		t.Error("an absent input is written")
	}
	// tags: a removal (nil) is written as null, keys sorted; no tags on an admission are written as none
	tagged, _, err := decodePayload("session.tagged", 1, Map{{"tags", Map{{"tier", nil}, {"customer", "acme"}}}}, false)
	if err != nil || tagged.(*SessionTagged).Tags["tier"] != nil || *tagged.(*SessionTagged).Tags["customer"] != "acme" ||
		!sameValue(PayloadMap(tagged), Map{{"tags", Map{{"customer", "acme"}, {"tier", nil}}}}) {
		t.Errorf("session.tagged reads as %s (%v)", show(PayloadMap(tagged)), err)
	}
	if _, has := PayloadMap(p).Get("tags"); has {
		t.Error("an admission without tags is written with tags")
	}
	// a signal's value: absent, null and a value are three things, and each is written as it came
	for _, data := range []Map{{}, {{"data", nil}}, {{"data", Map{{"amount", 12.5}}}}} {
		payload := append(Map{{"executionId", "e"}, {"kind", "signal"}, {"name", "n"}, {"outcome", "delivered"}}, data...)
		p, _, err := decodePayload("wait.resolved", 1, payload, false)
		if err != nil || p.(*WaitResolved).Data.Set != (len(data) == 1) || !sameValue(PayloadMap(p), payload) {
			t.Errorf("wait.resolved %s reads as %s (%v)", show(payload), show(PayloadMap(p)), err)
		}
	}
}
