package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends v as JavaScript's JSON.stringify writes it (what sessiond's workers and the
// Node client send): no spaces, keys in order (a Map's order; a Go map's sorted), non-ASCII as
// UTF-8, `<>&` and U+2028/U+2029 not escaped, `"` and `\` escaped, control characters as \b \f
// \n \r \t or \u00XX (lowercase hex). A string holding the (WTF-8) bytes of a lone UTF-16
// surrogate is written as its \uXXXX escape, as JSON.stringify writes a lone surrogate; any other
// invalid UTF-8 is an error. NaN and infinities are written as null, as JavaScript does.
func AppendJSON(b []byte, v any) ([]byte, error) {
	return appendJSON(b, v, 0)
}

func appendJSON(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errors.New("value nested too deep to write as JSON")
	}
	var err error
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case float32:
		return appendJSONFloat(b, float64(x)), nil
	case float64:
		return appendJSONFloat(b, x), nil
	case json.Number:
		return append(b, x...), nil
	case string:
		return appendJSONString(b, x)
	case []byte: // as JSON.stringify writes a Node Buffer (only a msgpack bin gives one)
		b = append(b, `{"type":"Buffer","data":[`...)
		for i, c := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendUint(b, uint64(c), 10)
		}
		return append(b, "]}"...), nil
	case []string:
		b = append(b, '[')
		for i, s := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSONString(b, s); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case Map:
		b = append(b, '{')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSONString(b, e.Key); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendJSON(b, e.Value, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case map[string]any:
		return appendJSON(b, sortedMap(x), depth)
	}
	if Convert != nil {
		if w, ok := Convert(v, true); ok {
			return appendJSON(b, w, depth)
		}
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.IsNil() {
		return append(b, "null"...), nil
	}
	// anything else: through encoding/json, then written again the JavaScript way
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	parsed, err := ParseJSON(raw)
	if err != nil {
		return nil, err
	}
	return appendJSON(b, parsed, depth)
}

func sortedMap(m map[string]any) Map {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(Map, len(keys))
	for i, k := range keys {
		out[i] = MapEntry{k, m[k]}
	}
	return out
}

// appendJSONFloat writes a number as JavaScript does (encoding/json's format is the same for
// finite numbers: shortest round-trip digits, exponents below 1e-6 and from 1e21).
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	if f == 0 {
		return append(b, '0') // -0 too
	}
	raw, _ := json.Marshal(f)
	return append(b, raw...)
}

const hexDigits = "0123456789abcdef"

func appendJSONString(b []byte, s string) ([]byte, error) {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b = append(b, '\\', '"')
			case c == '\\':
				b = append(b, '\\', '\\')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			// WTF-8 bytes of a lone surrogate (ED A0..BF 80..BF): JSON.stringify writes \uXXXX
			if i+2 < len(s) && s[i] == 0xed && s[i+1] >= 0xa0 && s[i+1] <= 0xbf && s[i+2] >= 0x80 && s[i+2] <= 0xbf {
				u := 0xd000 | rune(s[i+1]&0x3f)<<6 | rune(s[i+2]&0x3f)
				b = append(b, '\\', 'u', hexDigits[u>>12&0xf], hexDigits[u>>8&0xf], hexDigits[u>>4&0xf], hexDigits[u&0xf])
				i += 3
				continue
			}
			return nil, fmt.Errorf("the string is not valid UTF-8 at byte %d", i)
		}
		b = append(b, s[i:i+size]...)
		i += size
	}
	return append(b, '"'), nil
}

// ParseJSON parses one JSON value keeping what JavaScript's JSON.parse would: objects as Map in
// their key order (a repeated key keeps its first place and its last value), arrays as []any,
// numbers as int64 when written as integers within int64 (else float64), strings, booleans and
// null. A lone UTF-16 surrogate escape (`"\ud800"`) is kept as its WTF-8 bytes, so AppendJSON
// writes it back as it came. Data after the value other than whitespace is an error.
func ParseJSON(data []byte) (any, error) {
	p := jsonParser{data: data}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, p.fail("unexpected data after the JSON value")
	}
	return v, nil
}

type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) fail(why string) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", p.pos, why)
}

func (p *jsonParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) literal(word string, v any) (any, error) {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return nil, p.fail("unexpected character")
	}
	p.pos += len(word)
	return v, nil
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.fail("nested too deep")
	}
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		p.pos++
		out := Map{}
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == '}' {
			p.pos++
			return out, nil
		}
		for {
			p.space()
			if p.pos >= len(p.data) || p.data[p.pos] != '"' {
				return nil, p.fail("expected a string key")
			}
			key, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.pos >= len(p.data) || p.data[p.pos] != ':' {
				return nil, p.fail("expected ':'")
			}
			p.pos++
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out.Set(key, v)
			p.space()
			if p.pos < len(p.data) && p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.data) && p.data[p.pos] == '}' {
				p.pos++
				return out, nil
			}
			return nil, p.fail("expected ',' or '}'")
		}
	case c == '[':
		p.pos++
		out := []any{}
		p.space()
		if p.pos < len(p.data) && p.data[p.pos] == ']' {
			p.pos++
			return out, nil
		}
		for {
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			p.space()
			if p.pos < len(p.data) && p.data[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.data) && p.data[p.pos] == ']' {
				p.pos++
				return out, nil
			}
			return nil, p.fail("expected ',' or ']'")
		}
	case c == '"':
		return p.str()
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return nil, p.fail("unexpected character")
}

func (p *jsonParser) number() (any, error) {
	start := p.pos
	integral := true
	if p.data[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.fail("expected a digit")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		integral = false
		p.pos++
		if digits() == 0 {
			return nil, p.fail("expected a digit after '.'")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		integral = false
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.fail("expected a digit in the exponent")
		}
	}
	text := string(p.data[start:p.pos])
	if integral {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, p.fail(err.Error())
	}
	return f, nil
}

func (p *jsonParser) hex4() (rune, bool) {
	if len(p.data)-p.pos < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(n), true
}

func (p *jsonParser) str() (string, error) {
	p.pos++ // the opening quote
	var out []byte
	for {
		if p.pos >= len(p.data) {
			return "", p.fail("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(out), nil
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c == '\\':
			p.pos++
			if p.pos >= len(p.data) {
				return "", p.fail("unterminated escape")
			}
			e := p.data[p.pos]
			p.pos++
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.fail("bad \\u escape")
				}
				if r >= 0xd800 && r < 0xdc00 && bytes.HasPrefix(p.data[p.pos:], []byte(`\u`)) {
					save := p.pos
					p.pos += 2
					if r2, ok := p.hex4(); ok && r2 >= 0xdc00 && r2 < 0xe000 {
						out = utf8.AppendRune(out, 0x10000+(r-0xd800)<<10+(r2-0xdc00))
						continue
					}
					p.pos = save
				}
				if r >= 0xd800 && r < 0xe000 {
					// a lone surrogate: its WTF-8 bytes
					out = append(out, 0xed, byte(0x80|(r>>6)&0x3f), byte(0x80|r&0x3f))
					continue
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", p.fail("unknown escape")
			}
		default:
			out = append(out, c)
			p.pos++
		}
	}
}
