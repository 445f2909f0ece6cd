package sessiond

// The shared vectors and schemas of clients/protocol: every case decoded, and where it says so
// encoded byte for byte.

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func loadJSON(t *testing.T, parts ...string) Map {
	t.Helper()
	path := filepath.Join(append([]string{repoRoot(), "clients", "protocol"}, parts...)...)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	v, err := wire.ParseJSON(data)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return v.(Map)
}

func get(m Map, key string) any {
	v, _ := m.Get(key)
	return v
}

func str(m Map, key string) string {
	s, _ := get(m, key).(string)
	return s
}

func cases(t *testing.T, file Map) []Map {
	t.Helper()
	var out []Map
	for _, c := range get(file, "cases").([]any) {
		out = append(out, c.(Map))
	}
	if len(out) == 0 {
		t.Fatal("no cases")
	}
	return out
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex: %v", err)
	}
	return b
}

// sameValue compares decoded values as JSON sees them: maps with the same keys in the same
// order, numbers by value (an integral float64 equals its integer).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case Map:
		y, ok := b.(Map)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Key != y[i].Key || !sameValue(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}

// sameUnordered compares like sameValue, but maps by key whatever their order.
func sameUnordered(a, b any) bool {
	return reflect.DeepEqual(normalize(wire.ToGo(a)), normalize(wire.ToGo(b)))
}

func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	}
	if f, ok := number(v); ok {
		return f
	}
	return v
}

func show(v any) string {
	b, err := wire.AppendJSON(nil, v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

func TestMsgpackVectors(t *testing.T) {
	file := loadJSON(t, "vectors", "msgpack.json")
	seen := map[string]bool{}
	for _, c := range cases(t, file) {
		name, kind, subject := str(c, "name"), str(c, "kind"), str(c, "subject")
		data := unhex(t, str(c, "hex"))
		value := get(c, "value")
		roundtrip := get(c, "roundtrip") == true
		t.Run(name, func(t *testing.T) {
			// the bytes decode to the value
			decoded, err := wire.DecodeMsgpack(data)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !sameValue(decoded, value) {
				t.Fatalf("decoded\n%s\nwant\n%s", show(decoded), show(value))
			}
			if roundtrip {
				encoded, err := wire.EncodeMsgpack(value)
				if err != nil {
					t.Fatalf("encode: %v", err)
				}
				if !bytes.Equal(encoded, data) {
					t.Fatalf("encoded\n%x\nwant\n%x", encoded, data)
				}
			}
			// and through the client's readers, typed, and back
			switch kind {
			case "stored_batch":
				events, err := DecodeStoredMessage(data, subject, 7, 1796056745999)
				if err != nil {
					t.Fatalf("DecodeStoredMessage: %v", err)
				}
				// an older version reads as the current one (the case's read), and is written so
				frames := value.([]any)
				if read, upcast := c.Get("read"); upcast {
					frames = read.([]any)
				}
				if len(events) != len(frames) {
					t.Fatalf("%d events, want %d", len(events), len(frames))
				}
				for i, e := range events {
					checkTyped(t, e, seen)
					if e.Position != 7 || e.CommittedAt != 1796056745999 {
						t.Errorf("event %d: position %d committedAt %d, want the message's 7 and its stored time", i, e.Position, e.CommittedAt)
					}
					if !sameValue(e.frame(frameStored), frames[i]) {
						t.Errorf("event %d reads as\n%s\nwant\n%s", i, show(e.frame(frameStored)), show(frames[i]))
					}
					if _, isInt := any(e.Time).(int64); !isInt || float64(e.Time) != mustNumber(get(frames[i].(Map), "time")) {
						t.Errorf("event %d: time %d", i, e.Time)
					}
				}
				encoded, err := EncodeStoredMessage(events)
				if err != nil {
					t.Fatalf("EncodeStoredMessage: %v", err)
				}
				if roundtrip && !bytes.Equal(encoded, data) {
					t.Fatalf("EncodeStoredMessage:\n%x\nwant\n%x", encoded, data)
				}
				if again, err := wire.DecodeMsgpack(encoded); err != nil || !sameValue(again, any(frames)) {
					t.Fatalf("written again as\n%s\nwant\n%s", show(again), show(frames))
				}
			case "live":
				e, err := DecodeLiveMessage(data, subject)
				if err != nil {
					t.Fatalf("DecodeLiveMessage: %v", err)
				}
				checkTyped(t, e, seen)
				if !sameValue(e.frame(frameLive), value) {
					t.Fatalf("reads as\n%s\nwant\n%s", show(e.frame(frameLive)), show(value))
				}
				if _, hasSeq := value.(Map).Get("seq"); hasSeq == e.LiveOnly() {
					t.Fatalf("LiveOnly %v for a frame with seq %v", e.LiveOnly(), hasSeq)
				}
				if roundtrip {
					encoded, err := EncodeLiveMessage(e)
					if err != nil || !bytes.Equal(encoded, data) {
						t.Fatalf("EncodeLiveMessage: %v\n%x\nwant\n%x", err, encoded, data)
					}
				}
			case "export_frame":
				e, err := DecodeFrame(data)
				if err != nil {
					t.Fatalf("DecodeFrame: %v", err)
				}
				checkTyped(t, e, seen)
				m := value.(Map)
				if c, ok := m.Get("committedAt"); ok && float64(e.CommittedAt) != mustNumber(c) {
					t.Fatalf("committedAt %d, want %v", e.CommittedAt, c)
				}
				if p, ok := m.Get("position"); ok && float64(e.Position) != mustNumber(p) {
					t.Fatalf("position %d, want %v", e.Position, p)
				}
				if roundtrip {
					encoded, err := EncodeFrame(e)
					if err != nil || !bytes.Equal(encoded, data) {
						t.Fatalf("EncodeFrame: %v\n%x\nwant\n%x", err, encoded, data)
					}
				}
			default:
				t.Fatalf("unknown kind %q", kind)
			}
		})
	}
	for _, entry := range Catalog {
		if !seen[entry.Type] {
			t.Errorf("no vector decoded an event of type %s", entry.Type)
		}
	}
}

func mustNumber(v any) float64 {
	f, ok := number(v)
	if !ok {
		return math.NaN()
	}
	return f
}

// checkTyped: the payload is the catalog type's struct, with the type it says.
func checkTyped(t *testing.T, e Event, seen map[string]bool) {
	t.Helper()
	entry, ok := LookupType(e.Type)
	if !ok {
		t.Fatalf("type %s is not in the catalog", e.Type)
	}
	want := reflect.TypeOf(entry.new())
	if reflect.TypeOf(e.Payload) != want || e.Payload.EventType() != e.Type {
		t.Fatalf("payload of %s is a %T, want %v", e.Type, e.Payload, want)
	}
	if e.Version != entry.Version {
		t.Fatalf("version %d, want %d", e.Version, entry.Version)
	}
	seen[e.Type] = true
}

func TestInvalidVectors(t *testing.T) {
	file := loadJSON(t, "vectors", "invalid.json")
	for _, c := range cases(t, file) {
		name, kind, subject, code := str(c, "name"), str(c, "kind"), str(c, "subject"), str(c, "code")
		data := unhex(t, str(c, "hex"))
		t.Run(name, func(t *testing.T) {
			var err error
			switch kind {
			case "stored_batch":
				_, err = DecodeStoredMessage(data, subject, 7, 0)
			case "live":
				_, err = DecodeLiveMessage(data, subject)
			case "export_frame":
				_, err = DecodeFrame(data)
			default:
				t.Fatalf("unknown kind %q", kind)
			}
			if err == nil {
				t.Fatalf("accepted; want %s (%s)", code, str(c, "why"))
			}
			if got := ErrorCode(err); got != code {
				t.Fatalf("refused with %s (%v), want %s", got, err, code)
			}
			if len(err.Error()) < 20 {
				t.Fatalf("the refusal says too little: %v", err)
			}
		})
	}
}

func TestExportVector(t *testing.T) {
	file := loadJSON(t, "vectors", "export.json")
	data := unhex(t, str(file, "hex"))
	frames := get(file, "frames").([]any)
	header, events, err := ReadExport(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("ReadExport: %v", err)
	}
	if !sameValue(header.Fields, frames[0]) || header.Format != ExportFormat || header.Version != 1 {
		t.Fatalf("header %s, want %s", show(header.Fields), show(frames[0]))
	}
	if header.Events != int64(len(frames)-1) || header.Source != str(frames[0].(Map), "source") || float64(header.Created) != mustNumber(get(frames[0].(Map), "created")) {
		t.Fatalf("header %+v", header)
	}
	if len(events) != len(frames)-1 {
		t.Fatalf("%d events, want %d", len(events), len(frames)-1)
	}
	seen := map[string]bool{}
	for i, e := range events {
		checkTyped(t, e, seen)
		want := frames[i+1].(Map)
		got := e.frame(frameExport)
		if p, ok := want.Get("position"); ok {
			if float64(e.Position) != mustNumber(p) {
				t.Fatalf("frame %d: position %d, want %v", i+1, e.Position, p)
			}
			got = slices.Clone(got)
			got = append(got, MapEntry{Key: "position", Value: e.Position})
		}
		if !sameUnordered(got, want) {
			t.Fatalf("frame %d reads as\n%s\nwant\n%s", i+1, show(got), show(want))
		}
	}
	// written again, it is the same file
	var out bytes.Buffer
	if err := WriteExport(&out, header.Created, header.Source, events); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("WriteExport\n%x\nwant\n%x", out.Bytes(), data)
	}
	// a damaged file: the events before the damage are read, then a decode_failed naming the frame
	_, some, err := ReadExport(bytes.NewReader(data[:len(data)-3]))
	if ErrorCode(err) != CodeDecodeFailed || len(some) != len(events)-1 {
		t.Fatalf("truncated file: %d events, %v", len(some), err)
	}
	if _, _, err := ReadExport(bytes.NewReader(nil)); ErrorCode(err) != CodeDecodeFailed {
		t.Fatalf("empty file: %v", err)
	}
}

func TestCommandVectors(t *testing.T) {
	file := loadJSON(t, "vectors", "commands.json")
	for _, c := range cases(t, file) {
		name, verb, direction, text := str(c, "name"), str(c, "verb"), str(c, "direction"), str(c, "text")
		value := get(c, "json")
		t.Run(name, func(t *testing.T) {
			if direction == "request" {
				encoded, err := EncodeRequest(verb, value.(Map))
				if err != nil || string(encoded) != text {
					t.Fatalf("encoded %s (%v)\nwant    %s", encoded, err, text)
				}
				// the typed request gives the same bytes
				typed, err := EncodeRequest(verb, typedRequest(t, verb, value.(Map)))
				if err != nil || string(typed) != text {
					t.Fatalf("typed request %s (%v)\nwant          %s", typed, err, text)
				}
				return
			}
			parsed, err := wire.ParseJSON([]byte(text))
			if err != nil || !sameValue(parsed, value) {
				t.Fatalf("text parses as %s (%v), want %s", show(parsed), err, show(value))
			}
			reply := value.(Map)
			if ok, _ := reply.Get("ok"); ok == false {
				errBody := get(reply, "error").(Map)
				err := DecodeReply(verb, []byte(text), nil)
				var ce *CommandError
				if !asCommandError(err, &ce) {
					t.Fatalf("error reply read as %v", err)
				}
				if ce.Code != str(errBody, "code") || ce.Message != str(errBody, "message") || ce.Verb != verb {
					t.Fatalf("got %+v, want %s", ce, show(errBody))
				}
				if d, ok := errBody.Get("details"); ok && !sameUnordered(ce.Details, d) {
					t.Fatalf("details %v, want %s", ce.Details, show(d))
				}
				return
			}
			typed, want := typedReply(t, verb, []byte(text), reply)
			if !sameUnordered(typed, want) {
				t.Fatalf("typed reply\n%s\nwant\n%s", show(typed), show(want))
			}
		})
	}
}

func asCommandError(err error, target **CommandError) bool {
	ce, ok := err.(*CommandError)
	if ok {
		*target = ce
	}
	return ok
}

// typedRequest builds the request from the vector's fields through the typed API's body builders.
func typedRequest(t *testing.T, verb string, m Map) Map {
	t.Helper()
	session := str(m, "sessionId")
	switch verb {
	case VerbAdmit:
		r := AdmitRequest{Prompt: str(m, "prompt"), ID: str(m, "id"), Delivery: str(m, "delivery")}
		if list, isList := get(m, "prompt").([]any); isList { // a prompt of parts, read as the decoder reads one
			var is issues
			r.Parts = decodePrompt(list, "prompt", &is).Parts
			if len(is) > 0 {
				t.Fatalf("the vector's parts are refused here: %v", is)
			}
		}
		if w, ok := m.Get("wake"); ok {
			b := w.(bool)
			r.Wake = &b
		}
		r.NotBefore, _ = get(m, "notBefore").(int64)
		if tags, ok := m.Get("tags"); ok {
			r.Tags = vectorTags(t, tags)
		}
		return AdmitBody(session, r)
	case VerbWake:
		return WakeBody(session)
	case VerbCancel:
		return CancelBody(session, CancelRequest{Reason: str(m, "reason"), ExecutionID: str(m, "executionId"), Actor: str(m, "actor")})
	case VerbStatus:
		n, _ := get(m, "pendingFrom").(int64)
		return StatusBody(session, n)
	case VerbDrop:
		r := DropRequest{Reason: str(m, "reason")}
		for _, id := range get(m, "inputIds").([]any) {
			r.InputIDs = append(r.InputIDs, id.(string))
		}
		return DropBody(session, r)
	case VerbResolve:
		// as Approve, Deny (a reason or none) and Resolve (data or none) build it
		r := ResolveRequest{Kind: str(m, "kind"), Name: str(m, "name"), Outcome: str(m, "outcome"), Reason: str(m, "reason")}
		if d, ok := m.Get("data"); ok {
			r.Data = Any{Set: true, Value: d}
		}
		return ResolveBody(session, r)
	case VerbTag:
		// a value sets the key, null removes it
		r := TagRequest{Set: Tags{}}
		for _, e := range get(m, "tags").(Map) {
			if e.Value == nil {
				r.Remove = append(r.Remove, e.Key)
			} else {
				r.Set[e.Key] = e.Value.(string)
			}
		}
		return TagBody(session, r)
	case VerbBudget:
		r := BudgetRequest{Actor: str(m, "actor")}
		if v, ok := m.Get("tokens"); ok {
			if v == nil {
				r.ClearTokens = true
			} else {
				n, _ := wholeNumber(v)
				r.Tokens = &n
			}
		}
		if v, ok := m.Get("costUsd"); ok {
			if v == nil {
				r.ClearCost = true
			} else {
				f, _ := v.(float64)
				if n, isInt := v.(int64); isInt {
					f = float64(n)
				}
				r.CostUSD = &f
			}
		}
		r.Reset, _ = get(m, "reset").(bool)
		return BudgetBody(session, r)
	case VerbList:
		f := ListFilter{State: str(m, "state"), IDPrefix: str(m, "idPrefix"), CalledBy: str(m, "calledBy"), After: str(m, "after")}
		if w, ok := m.Get("waiting"); ok {
			b := w.(bool)
			f.Waiting = &b
		}
		if tags, ok := m.Get("tags"); ok {
			f.Tags = vectorTags(t, tags)
		}
		f.UpdatedSince, _ = get(m, "updatedSince").(int64)
		limit, _ := get(m, "limit").(int64)
		f.Limit = int(limit)
		if problem := checkListFilter(f); problem != "" {
			t.Fatalf("the vector's filter is refused here: %s", problem)
		}
		return ListBody(f)
	case VerbFork:
		o := ForkOptions{}
		o.At, _ = get(m, "at").(int64)
		if tags, ok := m.Get("tags"); ok {
			o.Tags = vectorTags(t, tags)
		}
		return ForkBody(str(m, "source"), session, o)
	case VerbEvents:
		afterSeq, _ := get(m, "afterSeq").(int64)
		limit, _ := get(m, "limit").(int64)
		return EventsBody(session, afterSeq, int(limit))
	case VerbUpload:
		data, err := base64.StdEncoding.DecodeString(str(m, "data"))
		if err != nil {
			t.Fatal(err)
		}
		r := UploadRequest{UploadID: str(m, "uploadId"), Data: data, MediaType: str(m, "mediaType"), SHA256: str(m, "sha256"), Owner: str(m, "owner")}
		r.Offset, _ = get(m, "offset").(int64)
		if size, ok := get(m, "size").(int64); ok {
			r.Size = &size
		}
		return UploadBody(r)
	case VerbBlob:
		offset, _ := get(m, "offset").(int64)
		return BlobBody(session, str(m, "sha256"), offset)
	}
	t.Fatalf("no typed request for %s", verb)
	return nil
}

func vectorTags(t *testing.T, v any) Tags {
	t.Helper()
	out := Tags{}
	for _, e := range v.(Map) {
		out[e.Key] = e.Value.(string)
	}
	if problem := checkTags(out, "the vector"); problem != "" {
		t.Fatalf("the vector's tags are refused here: %s", problem)
	}
	return out
}

// typedReply reads a success reply into its typed form; returns it (as JSON) and what it must equal.
func typedReply(t *testing.T, verb string, text []byte, reply Map) (any, any) {
	t.Helper()
	decode := func(out any) {
		t.Helper()
		if err := DecodeReply(verb, text, out); err != nil {
			t.Fatalf("DecodeReply: %v", err)
		}
	}
	switch verb {
	case VerbUpload:
		var r UploadReply
		decode(&r)
		return roundJSON(t, r), roundJSON(t, dropOK(reply))
	case VerbBlob:
		var r BlobChunk
		decode(&r)
		return roundJSON(t, r), roundJSON(t, dropOK(reply))
	case VerbAdmit:
		var r struct {
			Receipt AdmitReceipt `json:"receipt"`
		}
		decode(&r)
		return roundJSON(t, r.Receipt), get(reply, "receipt")
	case VerbWake:
		var r struct {
			Result WakeResult `json:"result"`
		}
		decode(&r)
		return roundJSON(t, r.Result), get(reply, "result")
	case VerbCancel:
		var r struct {
			Result CancelResult `json:"result"`
		}
		decode(&r)
		return roundJSON(t, r.Result), get(reply, "result")
	case VerbDrop:
		var r struct {
			Result DropResult `json:"result"`
		}
		decode(&r)
		return roundJSON(t, r.Result), get(reply, "result")
	case VerbResolve:
		var r struct {
			Result ResolveResult `json:"result"`
		}
		decode(&r)
		return roundJSON(t, r.Result), get(reply, "result")
	case VerbTag:
		var r struct {
			Result TagResult `json:"result"`
		}
		decode(&r)
		return roundJSON(t, r.Result), get(reply, "result")
	case VerbBudget:
		var r struct {
			Result BudgetResult `json:"result"`
		}
		decode(&r)
		return roundJSON(t, r.Result), get(reply, "result")
	case VerbFork:
		var r struct {
			Result ForkResult `json:"result"`
		}
		decode(&r)
		return roundJSON(t, r.Result), get(reply, "result")
	case VerbList:
		// as List reads it: Next "" for the last page (null on the wire)
		var r struct {
			Sessions []SessionListItem `json:"sessions"`
			Next     *string           `json:"next"`
		}
		decode(&r)
		var next any
		if r.Next != nil {
			next = *r.Next
		}
		return roundJSON(t, Map{{Key: "sessions", Value: r.Sessions}, {Key: "next", Value: next}}), Map{{Key: "sessions", Value: get(reply, "sessions")}, {Key: "next", Value: get(reply, "next")}}
	case VerbEvents:
		// each event checked and typed, and written back as the Node client writes it, byte for byte
		r, err := DecodeEventsReply(text)
		if err != nil {
			t.Fatalf("DecodeEventsReply: %v", err)
		}
		if again, err := wire.AppendJSON(nil, Map{{Key: "ok", Value: true}, {Key: "events", Value: r.Events}, {Key: "more", Value: r.More}}); err != nil || !bytes.Equal(again, text) {
			t.Fatalf("written again as %s (%v)", again, err)
		}
		return roundJSON(t, Map{{Key: "events", Value: r.Events}, {Key: "more", Value: r.More}}), Map{{Key: "events", Value: get(reply, "events")}, {Key: "more", Value: get(reply, "more")}}
	case VerbStatus:
		var st Status
		decode(&st)
		if !bytes.Equal(st.Raw, text) {
			t.Fatal("Status.Raw is not the reply")
		}
		rest := Map{}
		for _, e := range reply {
			if e.Key != "ok" {
				rest = append(rest, e)
			}
		}
		return roundJSON(t, st), rest
	}
	t.Fatalf("no typed reply for %s", verb)
	return nil, nil
}

// roundJSON is a typed value as JSON (through wire.AppendJSON) parsed back.
func roundJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := wire.AppendJSON(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := wire.ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// The catalog and the payload structs agree with events.schema.json: every type, its version and
// durability, and each payload's fields (names in order, required ones, types and limits).
func TestSchemaMatchesCatalog(t *testing.T) {
	schema := loadJSON(t, "schema", "events.schema.json")
	payloads := get(get(schema, "$defs").(Map), "payloads").(Map)
	var schemaTypes []string
	for _, e := range payloads {
		schemaTypes = append(schemaTypes, e.Key)
	}
	var ours []string
	for _, e := range Catalog {
		ours = append(ours, e.Type)
	}
	if !slices.Equal(schemaTypes, ours) {
		t.Fatalf("catalog types\n%v\nschema\n%v", ours, schemaTypes)
	}
	for _, entry := range Catalog {
		s := get(payloads, entry.Type).(Map)
		if v, _ := get(s, "x-sessiond-version").(int64); v != entry.Version {
			t.Errorf("%s: version %d, schema %d", entry.Type, entry.Version, v)
		}
		if d, _ := get(s, "x-sessiond-durable").(bool); d != entry.Durable {
			t.Errorf("%s: durable %v, schema %v", entry.Type, entry.Durable, d)
		}
		compareStruct(t, entry.Type, reflect.TypeOf(entry.new()).Elem(), s)
	}
}

// Every upcaster the schema names (payloads_gen.go's upcasterDescriptions) is written here, and no other.
func TestUpcastersMatchSchema(t *testing.T) {
	for typ, byVersion := range upcasterDescriptions {
		for v := range byVersion {
			if upcasters[typ][v] == nil {
				t.Errorf("%s: the schema has an upcaster from version %d, payloads.go none", typ, v)
			}
		}
	}
	for typ, byVersion := range upcasters {
		for v := range byVersion {
			if _, ok := upcasterDescriptions[typ][v]; !ok {
				t.Errorf("%s: payloads.go has an upcaster from version %d, the schema none", typ, v)
			}
		}
	}
}

func compareStruct(t *testing.T, path string, typ reflect.Type, s Map) {
	t.Helper()
	if get(s, "type") != "object" {
		t.Errorf("%s: schema type %v, want object", path, get(s, "type"))
		return
	}
	props, _ := get(s, "properties").(Map)
	rules := rulesOf(typ)
	var names, schemaNames []string
	for _, r := range rules {
		names = append(names, r.name)
	}
	for _, p := range props {
		schemaNames = append(schemaNames, p.Key)
	}
	if !slices.Equal(names, schemaNames) {
		t.Errorf("%s: fields %v, schema %v", path, names, schemaNames)
		return
	}
	var required []string
	for _, r := range get(s, "required").([]any) {
		required = append(required, r.(string))
	}
	for _, r := range rules {
		field := typ.Field(r.index)
		p := get(props, r.name).(Map)
		where := path + "." + r.name
		isRequired := slices.Contains(required, r.name)
		if isRequired == (r.opt || r.def != nil) {
			t.Errorf("%s: required %v in the schema, opt %v default %v here", where, isRequired, r.opt, r.def != nil)
		}
		if d, ok := p.Get("default"); ok && (r.def == nil || *r.def != d) {
			t.Errorf("%s: default %v in the schema", where, d)
		}
		if field.Type == promptType {
			comparePrompt(t, where, p)
			continue
		}
		if anyOf, ok := p.Get("anyOf"); ok { // nullable
			alts := anyOf.([]any)
			if !r.null || len(alts) != 2 || get(alts[1].(Map), "type") != "null" {
				t.Errorf("%s: nullable in the schema, null %v here", where, r.null)
				continue
			}
			p = alts[0].(Map)
		} else if r.null {
			t.Errorf("%s: nullable here, not in the schema", where)
		}
		ft := field.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		compareField(t, where, ft, r, p)
	}
}

func compareField(t *testing.T, where string, ft reflect.Type, r fieldRules, p Map) {
	t.Helper()
	if ft == anyType {
		if len(p) != 0 {
			t.Errorf("%s: any value here, schema %s", where, show(p))
		}
		return
	}
	typ := get(p, "type")
	switch ft.Kind() {
	case reflect.String:
		minLen, _ := get(p, "minLength").(int64)
		maxLen, hasMax := get(p, "maxLength").(int64)
		if typ != "string" || (r.id && (minLen != 1 || maxLen != 128)) || (r.nonempty && minLen != 1) ||
			(!r.id && !r.nonempty && minLen != 0) || (r.max >= 0 && maxLen != int64(r.max)) || (!r.id && r.max < 0 && hasMax) {
			t.Errorf("%s: string id=%v nonempty=%v max=%d here, schema %s", where, r.id, r.nonempty, r.max, show(p))
		}
		var enum []string
		if e, ok := p.Get("enum"); ok {
			for _, x := range e.([]any) {
				enum = append(enum, x.(string))
			}
		}
		if !slices.Equal(enum, r.enum) {
			t.Errorf("%s: enum %v here, schema %v", where, r.enum, enum)
		}
	case reflect.Bool:
		if typ != "boolean" {
			t.Errorf("%s: boolean here, schema %s", where, show(p))
		}
	case reflect.Int64:
		var min int64
		switch {
		case get(p, "minimum") != nil:
			min = get(p, "minimum").(int64)
		case get(p, "exclusiveMinimum") != nil:
			min = get(p, "exclusiveMinimum").(int64) + 1
		default:
			min = math.MinInt64
		}
		if typ != "integer" || r.min == nil || *r.min != min {
			t.Errorf("%s: integer min %v here, schema %s", where, r.min, show(p))
		}
	case reflect.Float64:
		min, _ := get(p, "minimum").(int64)
		if typ != "number" || r.min == nil || *r.min != min || get(p, "exclusiveMinimum") != nil {
			t.Errorf("%s: number min %v here, schema %s", where, r.min, show(p))
		}
	case reflect.Struct:
		compareStruct(t, where, ft, p)
	case reflect.Map: // tags: keys by the tag key pattern, values 1-256 characters (or null)
		keys, _ := get(p, "propertyNames").(Map)
		values, _ := get(p, "additionalProperties").(Map)
		if anyOf, ok := values.Get("anyOf"); ok {
			alts := anyOf.([]any)
			if ft.Elem().Kind() != reflect.Pointer || len(alts) != 2 || get(alts[1].(Map), "type") != "null" {
				t.Errorf("%s: nullable values in the schema, not here", where)
				return
			}
			values = alts[0].(Map)
		} else if ft.Elem().Kind() == reflect.Pointer {
			t.Errorf("%s: nullable values here, not in the schema", where)
		}
		if typ != "object" || !r.tags || get(keys, "pattern") != tagKeyRe.String() || get(values, "type") != "string" ||
			get(values, "minLength") != int64(1) || get(values, "maxLength") != int64(MaxTagValue) {
			t.Errorf("%s: tags=%v here, schema %s", where, r.tags, show(p))
		}
	case reflect.Slice:
		minItems, _ := get(p, "minItems").(int64)
		if typ != "array" || (minItems == 1) != r.nonempty {
			t.Errorf("%s: array nonempty=%v here, schema %s", where, r.nonempty, show(p))
			return
		}
		items := get(p, "items").(Map)
		et := ft.Elem()
		switch et {
		case promptPartType:
			comparePartShapes(t, where+"[]", items)
			return
		case transcriptItemType:
			compareUnion(t, where+"[]", items, []variant{
				{[]string{"user"}, reflect.TypeFor[TranscriptUser]()},
				{[]string{"assistant"}, reflect.TypeFor[TranscriptAssistant]()},
				{[]string{"summary"}, reflect.TypeFor[TranscriptSummary]()},
			})
			return
		case transcriptPartType:
			compareUnion(t, where+"[]", items, []variant{
				{[]string{"text", "reasoning"}, reflect.TypeFor[TranscriptText]()},
				{[]string{"tool"}, reflect.TypeFor[TranscriptTool]()},
			})
			return
		}
		if et.Kind() == reflect.Struct {
			compareStruct(t, where+"[]", et, items)
		} else {
			compareField(t, where+"[]", et, fieldRules{id: r.eachID, max: -1}, items)
		}
	default:
		t.Errorf("%s: field of kind %v", where, ft.Kind())
	}
}

// comparePrompt: the schema's prompt is a string or a non-empty list of parts, each of one of the
// shapes prompt.go checks (in the catalog's order: the fields, those required, nothing else, and
// each field's rule).
func comparePrompt(t *testing.T, where string, p Map) {
	t.Helper()
	alts, _ := get(p, "anyOf").([]any)
	if len(alts) != 2 || !sameValue(alts[0], Map{{Key: "type", Value: "string"}}) {
		t.Errorf("%s: a string or parts here, schema %s", where, show(p))
		return
	}
	list := alts[1].(Map)
	if get(list, "type") != "array" || get(list, "minItems") != int64(1) || get(list, "maxItems") != nil {
		t.Errorf("%s: a list of at least one part here, schema %s", where, show(list))
	}
	comparePartShapes(t, where+"[]", get(list, "items").(Map))
}

// comparePartShapes: a part of a prompt is one of the shapes prompt.go checks.
func comparePartShapes(t *testing.T, where string, items Map) {
	t.Helper()
	variants, _ := get(items, "anyOf").([]any)
	if len(variants) != len(partShapes) {
		t.Fatalf("%s: %d part shapes here, schema %d", where, len(partShapes), len(variants))
	}
	fieldSchemas := map[string]Map{
		"text":      {{Key: "type", Value: "string"}},
		"url":       {{Key: "type", Value: "string"}, {Key: "pattern", Value: partURLPattern}},
		"data":      {{Key: "type", Value: "string"}, {Key: "format", Value: "base64"}, {Key: "contentEncoding", Value: "base64"}, {Key: "pattern", Value: partBase64Pattern}},
		"mediaType": {{Key: "type", Value: "string"}, {Key: "pattern", Value: partMediaTypePattern}},
		"filename":  {{Key: "type", Value: "string"}, {Key: "minLength", Value: int64(1)}, {Key: "maxLength", Value: int64(maxFilename)}},
		"value":     {},
		"blob": {
			{Key: "type", Value: "object"},
			{Key: "properties", Value: Map{
				{Key: "sha256", Value: Map{{Key: "type", Value: "string"}, {Key: "pattern", Value: "^[0-9a-f]{64}$"}}},
				{Key: "size", Value: Map{{Key: "type", Value: "integer"}, {Key: "minimum", Value: int64(0)}, {Key: "maximum", Value: int64(9007199254740991)}}},
				{Key: "mediaType", Value: Map{{Key: "type", Value: "string"}, {Key: "pattern", Value: partMediaTypePattern}}},
			}},
			{Key: "required", Value: []any{"sha256", "size", "mediaType"}},
		},
	}
	for i, shape := range partShapes {
		v := variants[i].(Map)
		at := fmt.Sprintf("%s shape %d (%s)", where, i, shape.typ)
		props := get(v, "properties").(Map)
		var names []string
		for _, e := range props {
			names = append(names, e.Key)
		}
		var required []string
		for _, r := range get(v, "required").([]any) {
			required = append(required, r.(string))
		}
		if get(v, "type") != "object" || get(v, "additionalProperties") != false ||
			!slices.Equal(names, append([]string{"type"}, shape.fields...)) || !slices.Equal(required, append([]string{"type"}, shape.required...)) ||
			!sameValue(get(props, "type"), Map{{Key: "type", Value: "string"}, {Key: "const", Value: shape.typ}}) {
			t.Errorf("%s: fields %v required %v here, schema %s", at, shape.fields, shape.required, show(v))
			continue
		}
		for _, name := range shape.fields {
			if want := fieldSchemas[name]; !sameUnordered(get(props, name), want) {
				t.Errorf("%s.%s: %s here, schema %s", at, name, show(want), show(get(props, name)))
			}
		}
	}
}

// variant is one shape of a union (a transcript's items and parts): the types its "type" takes
// and its struct (the fields after "type").
type variant struct {
	types []string
	typ   reflect.Type
}

// compareUnion: the schema's items are anyOf these variants, in this order, each an object whose
// first (and required) property is "type" (a const, or an enum of the variant's types), then the
// struct's fields.
func compareUnion(t *testing.T, where string, items Map, variants []variant) {
	t.Helper()
	alts, _ := get(items, "anyOf").([]any)
	if len(alts) != len(variants) {
		t.Errorf("%s: %d variants here, schema %s", where, len(variants), show(items))
		return
	}
	for i, v := range variants {
		alt := alts[i].(Map)
		at := fmt.Sprintf("%s variant %v", where, v.types)
		props, _ := get(alt, "properties").(Map)
		if len(props) == 0 || props[0].Key != "type" {
			t.Errorf("%s: no type first, schema %s", at, show(alt))
			continue
		}
		want := Map{{Key: "type", Value: "string"}, {Key: "const", Value: v.types[0]}}
		if len(v.types) > 1 {
			var enum []any
			for _, typ := range v.types {
				enum = append(enum, typ)
			}
			want = Map{{Key: "type", Value: "string"}, {Key: "enum", Value: enum}}
		}
		if !sameValue(props[0].Value, want) {
			t.Errorf("%s: type %s here, schema %s", at, show(want), show(props[0].Value))
		}
		var required []any
		for _, r := range get(alt, "required").([]any) {
			if r != "type" {
				required = append(required, r)
			}
		}
		if len(required) == len(get(alt, "required").([]any)) {
			t.Errorf("%s: type not required in the schema", at)
		}
		rest := Map{{Key: "type", Value: "object"}, {Key: "properties", Value: props[1:]}, {Key: "required", Value: required}}
		compareStruct(t, at, v.typ, rest)
	}
}

// The request builders write the fields in the order commands.schema.json gives them, and the
// client's own error codes are the schema's.
func TestCommandsSchema(t *testing.T) {
	schema := loadJSON(t, "schema", "commands.schema.json")
	verbs := get(schema, "x-sessiond-verbs").(Map)
	yes := true
	size := int64(3)
	full := map[string]Map{
		VerbAdmit:   AdmitBody("s", AdmitRequest{Prompt: "p", ID: "i", Delivery: "queue", Wake: &yes, NotBefore: 1796056745917, Tags: Tags{"k": "v"}, Owner: "o", Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}),
		VerbTag:     TagBody("s", TagRequest{Set: Tags{"k": "v"}, Remove: []string{"x"}}),
		VerbBudget:  BudgetBody("s", BudgetRequest{ClearTokens: true, ClearCost: true, Reset: true, Actor: "a"}),
		VerbList:    ListBody(ListFilter{State: "idle", Waiting: &yes, Tags: Tags{"k": "v"}, IDPrefix: "s", UpdatedSince: 1, ReachableBy: "o", CalledBy: "p", Limit: 2, After: "a"}),
		VerbFork:    ForkBody("src", "s", ForkOptions{At: 3, Tags: Tags{"k": "v"}, Owner: "o"}),
		VerbEvents:  EventsBody("s", 3, 2),
		VerbUpload:  UploadBody(UploadRequest{UploadID: "u", Offset: 1, Data: []byte("d"), MediaType: "m", Size: &size, SHA256: "h", Owner: "o"}),
		VerbBlob:    blobBodyAt("s", "h", 2, 5),
		VerbWake:    WakeBody("s"),
		VerbCancel:  CancelBody("s", CancelRequest{Reason: "r", ExecutionID: "e", Actor: "a"}),
		VerbStatus:  StatusBody("s", 100),
		VerbDrop:    DropBody("s", DropRequest{InputIDs: []string{"i"}, Reason: "r", Actor: "a"}),
		VerbResolve: ResolveBody("s", ResolveRequest{Kind: "signal", Name: "n", Outcome: "delivered", Reason: "r", Data: Any{Set: true, Value: Map{{Key: "k", Value: int64(1)}}}, Actor: "a"}),
	}
	if len(verbs) != len(full) {
		t.Fatalf("schema verbs %d, here %d", len(verbs), len(full))
	}
	for _, v := range verbs {
		body, ok := full[v.Key]
		if !ok {
			t.Fatalf("verb %s unknown here", v.Key)
		}
		if get(v.Value.(Map), "subject") != CommandSubject(v.Key) {
			t.Errorf("%s: subject %v", v.Key, get(v.Value.(Map), "subject"))
		}
		props := get(get(v.Value.(Map), "request").(Map), "properties").(Map)
		if v.Key == VerbAdmit {
			comparePrompt(t, "admit.prompt", get(props, "prompt").(Map))
		}
		var want, got []string
		for _, p := range props {
			want = append(want, p.Key)
		}
		for _, e := range body {
			got = append(got, e.Key)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s request fields %v, schema %v", v.Key, got, want)
		}
	}
	var clientCodes []string
	for _, c := range get(schema, "x-sessiond-client-error-codes").([]any) {
		clientCodes = append(clientCodes, c.(string))
	}
	if !slices.Equal(clientCodes, []string{CodeNoWorker, CodeTimeout, CodePermissionDenied}) {
		t.Errorf("client error codes %v", clientCodes)
	}
}

// dropOK is the reply without its ok field (what the typed reply holds).
func dropOK(reply Map) Map {
	out := Map{}
	for _, e := range reply {
		if e.Key != "ok" {
			out = append(out, e)
		}
	}
	return out
}
