// Package wire is the Go client's codec: sessiond's canonical msgpack and JavaScript-style JSON,
// both keeping map key order (Map). Internal: package sessiond re-exports Map and MapEntry only.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"unicode/utf8"
)

// Map is a msgpack (or JSON) map that keeps its keys in order: what the decoder returns for every
// map, and what the canonical encoder writes in order. Use Get to look a key up.
type Map []MapEntry

// MapEntry is one key and its value in a Map.
type MapEntry struct {
	Key   string
	Value any
}

// Get returns the value of key and whether the map has it (the last one, when a key repeats).
func (m Map) Get(key string) (any, bool) {
	for i := len(m) - 1; i >= 0; i-- {
		if m[i].Key == key {
			return m[i].Value, true
		}
	}
	return nil, false
}

// Set replaces the value of key, or appends it.
func (m *Map) Set(key string, value any) {
	for i := range *m {
		if (*m)[i].Key == key {
			(*m)[i].Value = value
			return
		}
	}
	*m = append(*m, MapEntry{key, value})
}

// MarshalJSON writes the map as a JSON object, keys in order, strings as JavaScript's
// JSON.stringify writes them.
func (m Map) MarshalJSON() ([]byte, error) { return AppendJSON(nil, m) }

// ToGo turns Maps (recursively) into map[string]any, for callers that want Go's own maps.
func ToGo(v any) any {
	switch x := v.(type) {
	case Map:
		out := make(map[string]any, len(x))
		for _, e := range x {
			out[e.Key] = ToGo(e.Value)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ToGo(e)
		}
		return out
	}
	return v
}

// The range of integers JavaScript numbers hold exactly (Number.isSafeInteger).
const maxSafeInteger = 1<<53 - 1

// EncodeMsgpack writes v in sessiond's canonical msgpack (msgpackr's form, as the workers write
// it): every integer in its smallest form, except that an integer outside the 32-bit range is
// always int64 (0xd3); non-integral numbers as float64 (an integral float64 within 2^53 is an
// integer, as JavaScript has only numbers); strings, arrays and maps with their smallest header;
// map keys in order (a Map's order; a Go map's keys sorted); no ext, and no bin but for a []byte
// (which only a decoded bin gives). Accepted values: nil, bool, every Go integer and float type,
// string, []byte, []any, []string, Map, map[string]any, and what Convert turns into one of these
// (the client's Payload and Event values, as their frames).
func EncodeMsgpack(v any) ([]byte, error) {
	return appendMsgpack(nil, v, 0)
}

const maxDepth = 200

// Convert turns a value of the client's own types (events, payloads) into one these codecs
// write: a Map or a plain value. json says which codec asks (an event's JSON frame differs from
// its stored one). The client package sets it once, at init.
var Convert func(v any, json bool) (any, bool)

func appendMsgpack(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, errors.New("value nested too deep to encode")
	}
	switch x := v.(type) {
	case nil:
		return append(b, 0xc0), nil
	case bool:
		if x {
			return append(b, 0xc3), nil
		}
		return append(b, 0xc2), nil
	case int:
		return appendInt(b, int64(x)), nil
	case int8:
		return appendInt(b, int64(x)), nil
	case int16:
		return appendInt(b, int64(x)), nil
	case int32:
		return appendInt(b, int64(x)), nil
	case int64:
		return appendInt(b, x), nil
	case uint:
		return appendUint(b, uint64(x)), nil
	case uint8:
		return appendInt(b, int64(x)), nil
	case uint16:
		return appendInt(b, int64(x)), nil
	case uint32:
		return appendInt(b, int64(x)), nil
	case uint64:
		return appendUint(b, x), nil
	case float32:
		return appendFloat(b, float64(x)), nil
	case float64:
		return appendFloat(b, x), nil
	case string:
		return appendStr(b, x), nil
	case []byte:
		n := len(x)
		switch {
		case n < 0x100:
			b = append(b, 0xc4, byte(n))
		case n < 0x10000:
			b = append(b, 0xc5, byte(n>>8), byte(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xc6), uint32(n))
		}
		return append(b, x...), nil
	case []string:
		b = appendArrayHeader(b, len(x))
		for _, s := range x {
			b = appendStr(b, s)
		}
		return b, nil
	case []any:
		b = appendArrayHeader(b, len(x))
		var err error
		for _, e := range x {
			if b, err = appendMsgpack(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	case Map:
		b = appendMapHeader(b, len(x))
		var err error
		for _, e := range x {
			b = appendStr(b, e.Key)
			if b, err = appendMsgpack(b, e.Value, depth+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	case map[string]any:
		return appendMsgpack(b, sortedMap(x), depth)
	}
	if Convert != nil {
		if w, ok := Convert(v, false); ok {
			return appendMsgpack(b, w, depth)
		}
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		items := make([]any, rv.Len())
		for i := range items {
			items[i] = rv.Index(i).Interface()
		}
		return appendMsgpack(b, items, depth)
	case reflect.Pointer:
		if rv.IsNil() {
			return append(b, 0xc0), nil
		}
		return appendMsgpack(b, rv.Elem().Interface(), depth)
	}
	return nil, fmt.Errorf("cannot encode a %T as sessiond msgpack", v)
}

func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= 0x7f:
		return append(b, byte(n))
	case n >= 0 && n <= 0xff:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		return append(b, 0xcd, byte(n>>8), byte(n))
	case n >= 0 && n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	case n < 0 && n >= -32:
		return append(b, byte(n))
	case n < 0 && n >= -128:
		return append(b, 0xd0, byte(n))
	case n < 0 && n >= -32768:
		return append(b, 0xd1, byte(n>>8), byte(n))
	case n < 0 && n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	// outside 32 bits: always int64, never uint64 (the protocol's rule)
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

func appendUint(b []byte, n uint64) []byte {
	if n <= math.MaxInt64 {
		return appendInt(b, int64(n))
	}
	// beyond int64 only uint64 can hold it (msgpackr does the same for such a BigInt)
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}

func appendFloat(b []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) <= maxSafeInteger {
		return appendInt(b, int64(f)) // a JavaScript number that is an integer (-0 included)
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
}

func appendStr(b []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 0x100:
		b = append(b, 0xd9, byte(n))
	case n < 0x10000:
		b = append(b, 0xda, byte(n>>8), byte(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func appendArrayHeader(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n < 0x10000:
		return append(b, 0xdc, byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdd), uint32(n))
}

func appendMapHeader(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x80|byte(n))
	case n < 0x10000:
		return append(b, 0xde, byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint32(append(b, 0xdf), uint32(n))
}

// DecodeMsgpack reads exactly one msgpack value from data: maps as Map (string keys only, in
// order), arrays as []any, integers as int64 (uint64 above int64's range), float32 and float64 as
// float64, str as string (invalid UTF-8 as U+FFFD), bin as []byte (which no sessiond field
// accepts but an unknown value), nil as nil. It refuses ext types and map keys that are not
// strings (sessiond frames hold neither), truncated data and bytes after the value.
func DecodeMsgpack(data []byte) (any, error) {
	d := decoder{data: data}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.pos != len(data) {
		return nil, fmt.Errorf("%d bytes after the end of the msgpack value (at byte %d)", len(data)-d.pos, d.pos)
	}
	return v, nil
}

type decoder struct {
	data []byte
	pos  int
}

var errTruncated = errors.New("unexpected end of msgpack data")

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || len(d.data)-d.pos < n {
		return nil, fmt.Errorf("%w (needed %d more bytes at byte %d)", errTruncated, n, d.pos)
	}
	b := d.data[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *decoder) uint(n int) (uint64, error) {
	b, err := d.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

func (d *decoder) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("msgpack value nested more than %d levels deep (at byte %d)", maxDepth, d.pos)
	}
	start := d.pos
	tb, err := d.take(1)
	if err != nil {
		return nil, err
	}
	t := tb[0]
	switch {
	case t <= 0x7f:
		return int64(t), nil
	case t >= 0xe0:
		return int64(int8(t)), nil
	case t&0xf0 == 0x80:
		return d.mapOf(int(t&0x0f), depth)
	case t&0xf0 == 0x90:
		return d.arrayOf(int(t&0x0f), depth)
	case t&0xe0 == 0xa0:
		return d.str(int(t & 0x1f))
	}
	switch t {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xcc, 0xcd, 0xce, 0xcf:
		v, err := d.uint(1 << (t - 0xcc))
		if err != nil {
			return nil, err
		}
		if v > math.MaxInt64 {
			return v, nil
		}
		return int64(v), nil
	case 0xd0:
		v, err := d.uint(1)
		return int64(int8(v)), err
	case 0xd1:
		v, err := d.uint(2)
		return int64(int16(v)), err
	case 0xd2:
		v, err := d.uint(4)
		return int64(int32(v)), err
	case 0xd3:
		v, err := d.uint(8)
		return int64(v), err
	case 0xca:
		v, err := d.uint(4)
		return float64(math.Float32frombits(uint32(v))), err
	case 0xcb:
		v, err := d.uint(8)
		return math.Float64frombits(v), err
	case 0xd9, 0xda, 0xdb:
		n, err := d.uint(1 << (t - 0xd9))
		if err != nil {
			return nil, err
		}
		return d.str(int(n))
	case 0xdc, 0xdd:
		n, err := d.uint(2 << (t - 0xdc))
		if err != nil {
			return nil, err
		}
		return d.arrayOf(int(n), depth)
	case 0xde, 0xdf:
		n, err := d.uint(2 << (t - 0xde))
		if err != nil {
			return nil, err
		}
		return d.mapOf(int(n), depth)
	case 0xc4, 0xc5, 0xc6:
		n, err := d.uint(1 << (t - 0xc4))
		if err != nil {
			return nil, err
		}
		b, err := d.take(int(n))
		if err != nil {
			return nil, err
		}
		return slices.Clone(b), nil
	case 0xc7, 0xc8, 0xc9, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return nil, fmt.Errorf("msgpack ext at byte %d: sessiond frames hold no extension types", start)
	}
	return nil, fmt.Errorf("invalid msgpack byte 0x%02x at byte %d", t, start)
}

func (d *decoder) str(n int) (string, error) {
	b, err := d.take(n)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		// as JavaScript's decoders do, invalid UTF-8 reads as U+FFFD (here one per invalid byte)
		out := make([]rune, 0, len(b))
		for len(b) > 0 {
			r, size := utf8.DecodeRune(b)
			out = append(out, r)
			b = b[size:]
		}
		return string(out), nil
	}
	return string(b), nil
}

func (d *decoder) arrayOf(n int, depth int) (any, error) {
	if n > len(d.data)-d.pos { // every item takes a byte at least
		return nil, fmt.Errorf("%w (an array of %d items at byte %d)", errTruncated, n, d.pos)
	}
	out := make([]any, n)
	for i := range out {
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (d *decoder) mapOf(n int, depth int) (any, error) {
	if n > (len(d.data)-d.pos)/2 {
		return nil, fmt.Errorf("%w (a map of %d entries at byte %d)", errTruncated, n, d.pos)
	}
	out := make(Map, 0, n)
	for i := 0; i < n; i++ {
		at := d.pos
		k, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("msgpack map key at byte %d is a %s, not a string", at, kindOf(k))
		}
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, MapEntry{key, v})
	}
	return out, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "boolean"
	case int64, uint64, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case Map:
		return "map"
	}
	return fmt.Sprintf("%T", v)
}
