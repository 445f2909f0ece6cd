package sessiond

import (
	"fmt"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The payload structs' `sd` tags (see payloads.go) read as field rules, once per struct type.

type fieldRules struct {
	name     string
	index    int
	id       bool
	nonempty bool
	max      int
	enum     []string
	min      *int64
	eachID   bool
	opt      bool
	null     bool
	def      *string
	tags     bool
}

var (
	rulesCache sync.Map // reflect.Type -> []fieldRules
	anyType    = reflect.TypeFor[Any]()
	promptType = reflect.TypeFor[Prompt]()
)

func rulesOf(t reflect.Type) []fieldRules {
	if r, ok := rulesCache.Load(t); ok {
		return r.([]fieldRules)
	}
	var out []fieldRules
	for i := 0; i < t.NumField(); i++ {
		tag, ok := t.Field(i).Tag.Lookup("sd")
		if !ok {
			continue
		}
		parts := strings.Split(tag, ",")
		r := fieldRules{name: parts[0], index: i, max: -1}
		for _, p := range parts[1:] {
			key, value, _ := strings.Cut(p, "=")
			switch key {
			case "id":
				r.id = true
			case "nonempty":
				r.nonempty = true
			case "max":
				r.max, _ = strconv.Atoi(value)
			case "enum":
				r.enum = strings.Split(value, "|")
			case "min":
				n, _ := strconv.ParseInt(value, 10, 64)
				r.min = &n
			case "each":
				r.eachID = value == "id"
			case "opt":
				r.opt = true
			case "null":
				r.null = true
			case "default":
				v := value
				r.def = &v
			case "tags":
				r.tags = true
			default:
				panic("sessiond: unknown sd tag rule " + p)
			}
		}
		out = append(out, r)
	}
	rulesCache.Store(t, out)
	return out
}

// issues collects what is wrong with a payload, each with its path.
type issues []string

func (is *issues) add(path, format string, args ...any) {
	*is = append(*is, path+": "+fmt.Sprintf(format, args...))
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, uint64:
		return "number"
	case float64:
		if math.IsNaN(x) {
			return "NaN"
		}
		return "number"
	case []any:
		return "array"
	case Map:
		return "object"
	case []byte:
		return "binary"
	}
	return fmt.Sprintf("%T", v)
}

// wholeNumber is v as an integer when JavaScript's Number.isSafeInteger would accept it (an
// integral float64 included: old frames hold some).
func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		if x >= -maxSafeInteger && x <= maxSafeInteger {
			return x, true
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= maxSafeInteger {
			return int64(x), true
		}
	}
	return 0, false
}

func checkString(s string, r fieldRules, path string, is *issues) {
	n := codePoints(s) // as the catalog's zod schemas count
	switch {
	case r.id && (n < 1 || n > 128):
		is.add(path, "expected an id of 1-128 characters, got %d", n)
	case r.nonempty && n < 1:
		is.add(path, "expected a non-empty string")
	case r.max >= 0 && n > r.max:
		is.add(path, "expected at most %d characters, got %d", r.max, n)
	}
	if r.enum != nil {
		for _, e := range r.enum {
			if s == e {
				return
			}
		}
		is.add(path, "expected one of %s, got %s", strings.Join(r.enum, ", "), strconv.Quote(s))
	}
}

// decodeStruct fills the struct rv from raw (a Map), checking every rule.
func decodeStruct(rv reflect.Value, raw any, path string, is *issues) {
	m, ok := raw.(Map)
	if !ok {
		is.add(path, "expected an object, got %s", describe(raw))
		return
	}
	for _, r := range rulesOf(rv.Type()) {
		v, present := m.Get(r.name)
		decodeField(rv.Field(r.index), r, v, present, path+"."+r.name, is)
	}
}

func decodeField(fv reflect.Value, r fieldRules, v any, present bool, path string, is *issues) {
	if !present && r.def != nil {
		v, present = *r.def, true
	}
	if fv.Type() == anyType {
		if present {
			fv.Set(reflect.ValueOf(Any{Set: true, Value: v}))
		} else if !r.opt {
			is.add(path, "required")
		}
		return
	}
	if !present {
		if !r.opt {
			is.add(path, "required")
		}
		return
	}
	if fv.Kind() == reflect.Pointer {
		if v == nil {
			if !r.null {
				is.add(path, "expected %s, got null", fv.Type().Elem().Kind())
			}
			return
		}
		p := reflect.New(fv.Type().Elem())
		decodeValue(p.Elem(), r, v, path, is)
		fv.Set(p)
		return
	}
	decodeValue(fv, r, v, path, is)
}

func decodeValue(fv reflect.Value, r fieldRules, v any, path string, is *issues) {
	switch fv.Type() {
	case promptType: // a string or a list of parts (prompt.go)
		fv.Set(reflect.ValueOf(decodePrompt(v, path, is)))
		return
	case promptPartType: // one part of a prompt (prompt.go)
		fv.Set(reflect.ValueOf(decodePromptPart(v, path, is)))
		return
	case transcriptItemType: // a user, assistant or summary item (transcript.go)
		if item := decodeTranscriptItem(v, path, is); item != nil {
			fv.Set(reflect.ValueOf(item))
		}
		return
	case transcriptPartType: // a text, reasoning or tool part (transcript.go)
		if part := decodeTranscriptPart(v, path, is); part != nil {
			fv.Set(reflect.ValueOf(part))
		}
		return
	}
	switch fv.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			is.add(path, "expected string, got %s", describe(v))
			return
		}
		checkString(s, r, path, is)
		fv.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			is.add(path, "expected boolean, got %s", describe(v))
			return
		}
		fv.SetBool(b)
	case reflect.Int64:
		n, ok := wholeNumber(v)
		if !ok {
			is.add(path, "expected a whole number, got %s", preview(v))
			return
		}
		if r.min != nil && n < *r.min {
			is.add(path, "expected a number >= %d, got %d", *r.min, n)
		}
		fv.SetInt(n)
	case reflect.Float64:
		var f float64
		switch x := v.(type) {
		case int64:
			f = float64(x)
		case float64:
			f = x
		default:
			is.add(path, "expected a number, got %s", preview(v))
			return
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			is.add(path, "expected a finite number, got %v", f)
			return
		}
		if r.min != nil && f < float64(*r.min) {
			is.add(path, "expected a number >= %d, got %v", *r.min, f)
		}
		fv.SetFloat(f)
	case reflect.Struct:
		decodeStruct(fv, v, path, is)
	case reflect.Map: // tags: Tags, or TagChanges (values may be null)
		m, ok := v.(Map)
		if !ok {
			is.add(path, "expected an object of tags, got %s", describe(v))
			return
		}
		out := reflect.MakeMapWithSize(fv.Type(), len(m))
		et := fv.Type().Elem()
		for _, e := range m {
			where := path + "." + e.Key
			if !ValidTagKey(e.Key) {
				is.add(where, "expected a tag key (1-64 letters, digits or _ . : / -, starting with a letter or digit)")
			}
			if e.Value == nil && et.Kind() == reflect.Pointer {
				out.SetMapIndex(reflect.ValueOf(e.Key), reflect.Zero(et))
				continue
			}
			s, ok := e.Value.(string)
			if !ok {
				is.add(where, "expected string, got %s", describe(e.Value))
				continue
			}
			checkString(s, fieldRules{nonempty: true, max: MaxTagValue}, where, is)
			sv := reflect.ValueOf(s)
			if et.Kind() == reflect.Pointer {
				p := reflect.New(et.Elem())
				p.Elem().Set(sv)
				sv = p
			}
			out.SetMapIndex(reflect.ValueOf(e.Key), sv)
		}
		fv.Set(out)
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			is.add(path, "expected array, got %s", describe(v))
			return
		}
		if r.nonempty && len(items) == 0 {
			is.add(path, "expected at least one element")
		}
		out := reflect.MakeSlice(fv.Type(), len(items), len(items))
		elem := fieldRules{max: -1, id: r.eachID}
		for i, item := range items {
			decodeValue(out.Index(i), elem, item, fmt.Sprintf("%s[%d]", path, i), is)
		}
		fv.Set(out)
	default:
		panic("sessiond: payload field of unsupported kind " + fv.Kind().String())
	}
}

// encodeStruct is a payload struct as its canonical map: fields in declaration order, optional
// ones left out when absent, nullable ones nil.
func encodeStruct(rv reflect.Value) Map {
	rules := rulesOf(rv.Type())
	out := make(Map, 0, len(rules))
	for _, r := range rules {
		fv := rv.Field(r.index)
		if fv.Type() == anyType {
			a := fv.Interface().(Any)
			if a.Set {
				out = append(out, MapEntry{Key: r.name, Value: a.Value})
			}
			continue
		}
		if fv.Kind() == reflect.Pointer && fv.IsNil() {
			if r.null || !r.opt {
				out = append(out, MapEntry{Key: r.name, Value: nil})
			}
			continue
		}
		if (fv.Kind() == reflect.Map || fv.Kind() == reflect.Slice) && fv.IsNil() && r.opt {
			continue
		}
		out = append(out, MapEntry{Key: r.name, Value: encodeValue(fv)})
	}
	return out
}

func encodeValue(fv reflect.Value) any {
	switch fv.Type() {
	case promptType:
		return fv.Interface().(Prompt).wire()
	case promptPartType:
		return fv.Interface().(PromptPart).wire()
	}
	switch fv.Kind() {
	case reflect.Interface: // a transcript's item or part: its type, then its fields
		if fv.IsNil() {
			return nil
		}
		return variantWire(fv.Interface())
	case reflect.Pointer:
		return encodeValue(fv.Elem())
	case reflect.String:
		return fv.String()
	case reflect.Bool:
		return fv.Bool()
	case reflect.Int64:
		return fv.Int()
	case reflect.Float64:
		return fv.Float()
	case reflect.Struct:
		return encodeStruct(fv)
	case reflect.Slice:
		out := make([]any, fv.Len())
		for i := range out {
			out[i] = encodeValue(fv.Index(i))
		}
		return out
	case reflect.Map: // keys sorted, as sessiond writes tags
		keys := make([]string, 0, fv.Len())
		for _, k := range fv.MapKeys() {
			keys = append(keys, k.String())
		}
		slices.Sort(keys)
		out := make(Map, len(keys))
		for i, k := range keys {
			v := fv.MapIndex(reflect.ValueOf(k).Convert(fv.Type().Key()))
			if v.Kind() == reflect.Pointer && v.IsNil() {
				out[i] = MapEntry{Key: k, Value: nil}
			} else {
				out[i] = MapEntry{Key: k, Value: encodeValue(v)}
			}
		}
		return out
	}
	panic("sessiond: payload field of unsupported kind " + fv.Kind().String())
}

// payloadMap is a payload as the map sessiond writes (keys in the catalog's order; an
// UnknownPayload's fields as they came).
func payloadMap(p Payload) Map {
	if u, ok := p.(*UnknownPayload); ok {
		return u.Fields
	}
	rv := reflect.ValueOf(p)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	return encodeStruct(rv)
}

// preview is a short JSON text of a value, for error messages.
func preview(v any) string {
	b, err := wire.AppendJSON(nil, v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	if utf16Len(string(b)) > 120 {
		return utf16Prefix(string(b), 120) + "..." // as sessiond's preview cuts (120 UTF-16 units)
	}
	return string(b)
}

func reflectElem(p Payload) reflect.Value { return reflect.ValueOf(p).Elem() }
