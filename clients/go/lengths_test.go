package sessiond

// Every length limit of the catalog counts as zod 4's string min and max count (Unicode code points,
// src/events/catalog.ts): a limit of N takes N emoji and refuses N+1, where a count of UTF-16 units
// would refuse N/2+1. Verdicts as sessiond's own reader gives them (parsePayload, checked by hand
// against zod 4.6).

import (
	"strings"
	"testing"
)

// lengthLimits: each limit of the catalog, as an event type and the payload that holds s where the limit applies.
var lengthLimits = []struct {
	name    string
	limit   int
	typ     string
	payload func(s string) Map
}{
	{"an id", 128, "execution.started", func(s string) Map { return Map{{Key: "executionId", Value: s}} }},
	{"a cancel reason", 1000, "execution.cancelled", func(s string) Map { return Map{{Key: "executionId", Value: "e"}, {Key: "reason", Value: s}} }},
	{"a drop reason", 1000, "input.dropped", func(s string) Map { return Map{{Key: "inputIds", Value: []any{"i"}}, {Key: "reason", Value: s}} }},
	{"a wait's name", 200, "wait.started", func(s string) Map {
		return Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "signal"}, {Key: "name", Value: s}}
	}},
	{"a resolved wait's name", 200, "wait.resolved", func(s string) Map {
		return Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "signal"}, {Key: "name", Value: s}, {Key: "outcome", Value: "delivered"}}
	}},
	{"a wait's reason", 1000, "wait.resolved", func(s string) Map {
		return Map{{Key: "executionId", Value: "e"}, {Key: "kind", Value: "approval"}, {Key: "name", Value: "c"}, {Key: "outcome", Value: "denied"}, {Key: "reason", Value: s}}
	}},
	{"a tag value", 256, "session.tagged", func(s string) Map { return Map{{Key: "tags", Value: Map{{Key: "customer", Value: s}}}} }},
	{"an admission's tag value", 256, "input.admitted", func(s string) Map {
		return Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: "p"}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}, {Key: "tags", Value: Map{{Key: "customer", Value: s}}}}
	}},
	{"a file part's name", 256, "input.admitted", func(s string) Map {
		part := Map{{Key: "type", Value: "file"}, {Key: "data", Value: "AAAA"}, {Key: "mediaType", Value: "text/csv"}, {Key: "filename", Value: s}}
		return Map{{Key: "inputId", Value: "i"}, {Key: "prompt", Value: []any{part}}, {Key: "delivery", Value: "queue"}, {Key: "wake", Value: true}}
	}},
}

func TestLengthLimitsCountCodePoints(t *testing.T) {
	const (
		emoji    = "😀"            // U+1F600: one code point, two UTF-16 units
		lone     = "\xed\xa0\x80" // a lone high surrogate (U+D800) as a string holds it (WTF-8): one
		pairWTF8 = "\xed\xa0\xbd\xed\xb8\x80"
	)
	for _, l := range lengthLimits {
		version := int64(1)
		if l.typ == "input.admitted" {
			version = 2
		}
		check := func(s string, accepted bool, what string) {
			t.Helper()
			_, _, err := decodePayload(l.typ, version, l.payload(s), false)
			switch {
			case accepted && err != nil:
				t.Errorf("%s of %s (limit %d) refused: %v", l.name, what, l.limit, err)
			case !accepted && (err == nil || err.Code != CodeInvalidPayload):
				t.Errorf("%s of %s (limit %d) accepted (%v)", l.name, what, l.limit, err)
			}
		}
		n := l.limit
		check(strings.Repeat(emoji, n), true, "exactly the limit in emoji")
		check(strings.Repeat(emoji, n+1), false, "one emoji over the limit")
		check(strings.Repeat(emoji, n-1)+"x", true, "emoji and one letter, at the limit")
		check(strings.Repeat(emoji, n)+"x", false, "emoji and one letter, one over")
		check(strings.Repeat(emoji, n-1)+lone, true, "emoji and a lone surrogate, at the limit")
		check(strings.Repeat(emoji, n-1)+lone+lone, false, "emoji and two lone surrogates, one over")
		// a high surrogate's bytes then a low one's are the pair 😀 to JavaScript: one character
		check(strings.Repeat(emoji, n-1)+pairWTF8, true, "emoji and a surrogate pair held as WTF-8, at the limit")
	}
}

func TestCodePointsCountAsZod(t *testing.T) {
	for s, want := range map[string]int{
		"": 0, "abc": 3, "Zoë": 3, "e\u0301": 2, "😀😀": 2, "👍🏽": 2,
		"a\xed\xa0\x80b":           3, // a lone high surrogate
		"\xed\xb0\x80\xed\xa0\x80": 2, // a low then a high: two lone ones
		"\xed\xa0\xbd\xed\xb8\x80": 1, // a high then a low: 😀
		"\xed\xa0\x80\xed\xa0\x80": 2, // two high ones
		"\xff\xfe":                 2, "\xed\xa0": 2, "\xed\xa0x": 3,
	} {
		if got := codePoints(s); got != want {
			t.Errorf("codePoints(%q) = %d, want %d", s, got, want)
		}
	}
}

// A list filter's tags are checked before they are sent as a worker checks them (src/events/tags.ts
// counts a value's UTF-16 units, JavaScript's .length: an emoji is two), so what the client lets
// through the worker takes, and what it refuses the worker would refuse with the same words.
func TestFilterTagValuesCountAsAWorkerCounts(t *testing.T) {
	for value, ok := range map[string]bool{
		strings.Repeat("😀", MaxTagValue/2): true, strings.Repeat("😀", MaxTagValue/2) + "x": false,
		strings.Repeat("é", MaxTagValue): true, strings.Repeat("é", MaxTagValue+1): false,
	} {
		problem := checkListFilter(ListFilter{Tags: Tags{"k": value}})
		if (problem == "") != ok || (!ok && !strings.Contains(problem, "a value is a string of 1 to 256 characters")) {
			t.Errorf("a filter tag of %d code points, %d UTF-16 units: %q", codePoints(value), utf16Len(value), problem)
		}
	}
}

// Messages show a long value cut as sessiond cuts it (JavaScript's slice: UTF-16 units, so half a
// pair can be left, and JSON.stringify writes it as \ud83d), and an id's length counted as sessiond counts it.
func TestMessagesCountAsSessiondCounts(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 2, "ab"}, {"abc", 5, "abc"}, {"a😀b", 3, "a😀"}, {"a😀b", 2, "a\xed\xa0\xbd"}, {"a😀b", 1, "a"},
		{"é日本", 2, "é日"}, {"\xed\xa0\x80ab", 2, "\xed\xa0\x80a"},
	} {
		if got := utf16Prefix(c.s, c.n); got != c.want {
			t.Errorf("utf16Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
	if got := quoteJSON(utf16Prefix("x"+strings.Repeat("😀", 50), 80)); got != `"x`+strings.Repeat("😀", 39)+`\ud83d"` {
		t.Errorf("a value cut in a pair is shown as %s", got)
	}
	if got := preview(strings.Repeat("😀", 70)); got != `"`+strings.Repeat("😀", 59)+"\xed\xa0\xbd..." {
		t.Errorf("a preview of 70 emoji is %q", got)
	}
	for id, want := range map[string]string{
		strings.Repeat("é", 100): `it contains "é"`, // 100 units, 200 bytes: within the length
		strings.Repeat("😀", 64):  `it contains "😀"`, // 128 units
		strings.Repeat("😀", 65):  "it is 130 characters long",
		strings.Repeat("x", 129): "it is 129 characters long",
	} {
		if got := idProblem(id); got != want {
			t.Errorf("idProblem of %d runes: %q, want %q", len([]rune(id)), got, want)
		}
	}
}
