package sessiond

import (
	"encoding/base64"
	"fmt"
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Prompts (src/events/prompt.ts, the catalog's Prompt and PromptPart): a string, or a list of parts.

// Prompt is an admission's prompt (InputAdmitted.Prompt): a string (Text, with Parts nil), or a
// list of parts (Parts, non-nil; Text is then ""). Version-1 input.admitted events always hold a
// string. PromptText (or String) is its text form.
type Prompt struct {
	Text  string
	Parts []PromptPart
}

// The kinds of prompt part (PromptPart.Type).
const (
	PartText  = "text"
	PartImage = "image"
	PartFile  = "file"
	PartJSON  = "json"
)

// MaxPromptParts is the most parts a prompt may have (a worker refuses more with invalid_option).
const MaxPromptParts = 64

// PromptPart is one part of a prompt. Type says which fields it holds:
//
//	text   Text
//	image  URL (http://, https:// or data:; MediaType optional), or Data (base64) and MediaType,
//	       or Blob (a blob stored beside the log: its hash, size and media type)
//	file   URL or Data, MediaType, and optionally Filename (1-256 characters); or Blob and optionally Filename
//	json   Value: any JSON value (as decoded: Map for objects, []any, int64 or float64, string, bool, nil)
//
// An image or a file is by URL when URL is set, else by Data. MediaType is a type/subtype such as
// image/png. TextPart, ImageURL, ImageBytes, ImageBlob, FileURL, FileBytes, FileBlob and JSONPart
// build them.
type PromptPart struct {
	Type      string
	Text      string
	URL       string
	Data      string
	MediaType string
	Filename  string
	Value     any
	// Blob: the part's bytes are stored beside the log (the embedded log stores an image or a file
	// over 64 KiB there at admission); its hash (SHA-256, lower-case hex), size and media type.
	Blob *BlobRef
}

// TextPart is a part of text.
func TextPart(text string) PromptPart { return PromptPart{Type: PartText, Text: text} }

// ImageURL is an image by URL; mediaType "" gives none.
func ImageURL(url, mediaType string) PromptPart {
	return PromptPart{Type: PartImage, URL: url, MediaType: mediaType}
}

// ImageBytes is an image by its bytes (sent as base64), of mediaType (e.g. image/png).
func ImageBytes(data []byte, mediaType string) PromptPart {
	return PromptPart{Type: PartImage, Data: base64.StdEncoding.EncodeToString(data), MediaType: mediaType}
}

// FileURL is a file by URL, of mediaType; filename "" gives none.
func FileURL(url, mediaType, filename string) PromptPart {
	return PromptPart{Type: PartFile, URL: url, MediaType: mediaType, Filename: filename}
}

// FileBytes is a file by its bytes (sent as base64), of mediaType; filename "" gives none.
func FileBytes(data []byte, mediaType, filename string) PromptPart {
	return PromptPart{Type: PartFile, Data: base64.StdEncoding.EncodeToString(data), MediaType: mediaType, Filename: filename}
}

// ImageBlob is an image by a stored blob's reference (UploadBlob's).
func ImageBlob(ref BlobRef) PromptPart { return PromptPart{Type: PartImage, Blob: &ref} }

// FileBlob is a file by a stored blob's reference (UploadBlob's); filename "" gives none.
func FileBlob(ref BlobRef, filename string) PromptPart {
	return PromptPart{Type: PartFile, Blob: &ref, Filename: filename}
}

// JSONPart is a part of JSON data: value is written as JavaScript's JSON.stringify writes it.
func JSONPart(value any) PromptPart { return PromptPart{Type: PartJSON, Value: value} }

// Bytes is an image's or a file's Data, decoded from base64.
func (p PromptPart) Bytes() ([]byte, error) { return base64.StdEncoding.DecodeString(p.Data) }

// byData reports an image or a file given by its bytes (no URL).
func (p PromptPart) byData() bool {
	return (p.Type == PartImage || p.Type == PartFile) && p.URL == "" && p.Blob == nil
}

// wire is the part as sessiond writes it: type, then text, url, data, mediaType, filename and
// value, each where the part holds it (the catalog's order, so a stored part is written back byte
// for byte).
func (p PromptPart) wire() Map {
	m := Map{{Key: "type", Value: p.Type}}
	if p.Type == PartText || p.Text != "" {
		m = append(m, MapEntry{Key: "text", Value: p.Text})
	}
	if p.URL != "" {
		m = append(m, MapEntry{Key: "url", Value: p.URL})
	}
	if p.byData() || p.Data != "" {
		m = append(m, MapEntry{Key: "data", Value: p.Data})
	}
	if p.MediaType != "" {
		m = append(m, MapEntry{Key: "mediaType", Value: p.MediaType})
	}
	if p.Blob != nil {
		m = append(m, MapEntry{Key: "blob", Value: Map{
			{Key: "sha256", Value: p.Blob.Sha256},
			{Key: "size", Value: p.Blob.Size},
			{Key: "mediaType", Value: p.Blob.MediaType},
		}})
	}
	if p.Filename != "" {
		m = append(m, MapEntry{Key: "filename", Value: p.Filename})
	}
	if p.Type == PartJSON || p.Value != nil {
		m = append(m, MapEntry{Key: "value", Value: p.Value})
	}
	return m
}

// MarshalJSON writes the part as sessiond does.
func (p PromptPart) MarshalJSON() ([]byte, error) { return wire.AppendJSON(nil, p.wire()) }

// IsParts reports a prompt of parts (not a string).
func (p Prompt) IsParts() bool { return p.Parts != nil }

// wire is the prompt as sessiond writes it: the string, or the list of parts.
func (p Prompt) wire() any {
	if p.Parts == nil {
		return p.Text
	}
	return partsWire(p.Parts)
}

func partsWire(parts []PromptPart) []any {
	out := make([]any, len(parts))
	for i, part := range parts {
		out[i] = part.wire()
	}
	return out
}

// MarshalJSON writes the prompt as sessiond does: a string, or a list of parts.
func (p Prompt) MarshalJSON() ([]byte, error) { return wire.AppendJSON(nil, p.wire()) }

// String is PromptText(p).
func (p Prompt) String() string { return PromptText(p) }

// PromptText is a prompt as text, as sessiond shows it (promptText: what a runner reading text,
// the CLI and the inspector see): a string as it is; parts joined by newlines, a JSON part as its
// JSON text, an image or a file as a bracketed note ("[image https://...]", "[file report.pdf
// application/pdf, 1234 bytes]").
func PromptText(p Prompt) string {
	if p.Parts == nil {
		return p.Text
	}
	texts := make([]string, len(p.Parts))
	for i, part := range p.Parts {
		texts[i] = partText(part)
	}
	return strings.Join(texts, "\n")
}

func partText(p PromptPart) string {
	switch p.Type {
	case PartText:
		return p.Text
	case PartJSON:
		b, err := wire.AppendJSON(nil, p.Value)
		if err != nil {
			return fmt.Sprintf("%v", p.Value)
		}
		return string(b)
	}
	var b strings.Builder
	b.WriteString("[" + p.Type)
	if p.Type == PartFile && p.Filename != "" {
		b.WriteString(" " + p.Filename)
	}
	if p.Blob != nil {
		sha := p.Blob.Sha256
		if len(sha) > 12 {
			sha = sha[:12]
		}
		b.WriteString(fmt.Sprintf(" %s, %d bytes, stored as blob %s]", p.Blob.MediaType, p.Blob.Size, sha))
		return b.String()
	}
	if p.URL != "" {
		if strings.HasPrefix(p.URL, "data:") {
			b.WriteString(" data URL")
		} else {
			b.WriteString(" " + p.URL)
		}
	}
	if p.MediaType != "" {
		b.WriteString(" " + p.MediaType)
	}
	if p.byData() {
		// the bytes base64 holds, as sessiond counts them (from the text's length and its padding)
		n := len(p.Data) * 3 / 4
		switch {
		case strings.HasSuffix(p.Data, "=="):
			n -= 2
		case strings.HasSuffix(p.Data, "="):
			n--
		}
		b.WriteString(", " + strconv.Itoa(n) + " bytes")
	}
	b.WriteString("]")
	return b.String()
}

// The catalog's rules for parts (the patterns are the schema's, clients/protocol/schema).
const (
	partURLPattern       = `^(https?:\/\/|data:)`
	partMediaTypePattern = `^[a-z]+\/[A-Za-z0-9.+-]+$`
	partBase64Pattern    = `^$|^(?:[0-9a-zA-Z+/]{4})*(?:(?:[0-9a-zA-Z+/]{2}==)|(?:[0-9a-zA-Z+/]{3}=))?$`
	maxFilename          = 256
)

var (
	partURLRe       = regexp.MustCompile(partURLPattern)
	partMediaTypeRe = regexp.MustCompile(partMediaTypePattern)
	partBase64Re    = regexp.MustCompile(partBase64Pattern)
)

// partShape is one shape a part may have (the catalog's union, in its order): its type, its
// fields after type (in order) and those of them it requires. No other key is allowed.
type partShape struct {
	typ      string
	fields   []string
	required []string
}

var partShapes = []partShape{
	{PartText, []string{"text"}, []string{"text"}},
	{PartImage, []string{"url", "mediaType"}, []string{"url"}},
	{PartImage, []string{"data", "mediaType"}, []string{"data", "mediaType"}},
	{PartImage, []string{"blob"}, []string{"blob"}},
	{PartFile, []string{"url", "mediaType", "filename"}, []string{"url", "mediaType"}},
	{PartFile, []string{"data", "mediaType", "filename"}, []string{"data", "mediaType"}},
	{PartFile, []string{"blob", "filename"}, []string{"blob"}},
	{PartJSON, []string{"value"}, []string{"value"}},
}

// partFieldOK checks one field of a part.
func partFieldOK(name string, v any) bool {
	if name == "value" {
		return isJSONValue(v)
	}
	if name == "blob" {
		_, ok := blobRefOf(v)
		return ok
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	switch name {
	case "url":
		return partURLRe.MatchString(s)
	case "data":
		return partBase64Re.MatchString(s)
	case "mediaType":
		return partMediaTypeRe.MatchString(s)
	case "filename":
		n := codePoints(s) // zod's max counts code points
		return n >= 1 && n <= maxFilename
	}
	return true // text
}

// isJSONValue: null, a boolean, a finite number, a string, a list or a map of them.
func isJSONValue(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, int64, uint64:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case []any:
		for _, e := range x {
			if !isJSONValue(e) {
				return false
			}
		}
		return true
	case Map:
		for _, e := range x {
			if !isJSONValue(e.Value) {
				return false
			}
		}
		return true
	}
	return false
}

// partRule is what a part of its type must hold (sessiond's words for an invalid one).
func partRule(typ any) string {
	switch typ {
	case PartText:
		return `a text part is { "type": "text", "text": "..." } and nothing else`
	case PartImage:
		return `an image is { "type": "image", "url": "https://..." } (mediaType optional), { "type": "image", "data": "<base64>", "mediaType": "image/png" } or { "type": "image", "blob": { "sha256": "<64 hex digits>", "size": <bytes>, "mediaType": "image/png" } }`
	case PartFile:
		return `a file is { "type": "file", "url": "https://...", "mediaType": "application/pdf" }, { "type": "file", "data": "<base64>", "mediaType": "...", "filename": "..." } or { "type": "file", "blob": { "sha256": "...", "size": <bytes>, "mediaType": "..." }, "filename": "..." } (filename optional)`
	case PartJSON:
		return `a JSON part is { "type": "json", "value": <any JSON value> }`
	}
	return `type must be "text", "image", "file" or "json"`
}

var blobSha256Re = regexp.MustCompile(`^[0-9a-f]{64}$`)

// blobRefOf reads a part's blob reference: sha256 (64 lower-case hex digits), size (0 or more) and
// mediaType (other keys are dropped, as sessiond's schema drops them).
func blobRefOf(v any) (BlobRef, bool) {
	m, ok := v.(Map)
	if !ok {
		return BlobRef{}, false
	}
	sha, _ := m.Get("sha256")
	size, _ := m.Get("size")
	mediaType, _ := m.Get("mediaType")
	s, okS := sha.(string)
	t, okT := mediaType.(string)
	var n int64
	okN := false
	switch x := size.(type) {
	case int64:
		n, okN = x, x >= 0
	case uint64:
		n, okN = int64(x), x <= math.MaxInt64
	}
	if !okS || !okT || !okN || !blobSha256Re.MatchString(s) || !partMediaTypeRe.MatchString(t) {
		return BlobRef{}, false
	}
	return BlobRef{Sha256: s, Size: n, MediaType: t}, true
}

// decodePart reads one part, or says what is wrong with it.
func decodePart(raw any) (PromptPart, string) {
	m, ok := raw.(Map)
	if !ok {
		return PromptPart{}, fmt.Sprintf(`expected an object like { "type": "text", "text": "..." }, got %s`, describe(raw))
	}
	typ, _ := m.Get("type")
	for _, shape := range partShapes {
		if typ != shape.typ || !fitsShape(m, shape) {
			continue
		}
		p := PromptPart{Type: shape.typ}
		for _, e := range m {
			switch e.Key {
			case "text":
				p.Text = e.Value.(string)
			case "url":
				p.URL = e.Value.(string)
			case "data":
				p.Data = e.Value.(string)
			case "mediaType":
				p.MediaType = e.Value.(string)
			case "filename":
				p.Filename = e.Value.(string)
			case "value":
				p.Value = e.Value
			case "blob":
				ref, _ := blobRefOf(e.Value)
				p.Blob = &ref
			}
		}
		return p, ""
	}
	return PromptPart{}, fmt.Sprintf("%s is not a valid part: %s", preview(typ), partRule(typ))
}

func fitsShape(m Map, shape partShape) bool {
	for _, e := range m {
		if e.Key != "type" && !slices.Contains(shape.fields, e.Key) {
			return false
		}
	}
	for _, name := range shape.fields {
		v, present := m.Get(name)
		if !present {
			if slices.Contains(shape.required, name) {
				return false
			}
			continue
		}
		if !partFieldOK(name, v) {
			return false
		}
	}
	return true
}

// decodePrompt reads a payload's prompt: a string, or a list of at least one valid part.
func decodePrompt(v any, path string, is *issues) Prompt {
	switch x := v.(type) {
	case string:
		return Prompt{Text: x}
	case []any:
		if len(x) == 0 {
			is.add(path, "expected a string or at least one part, got an empty list")
			return Prompt{}
		}
		parts := make([]PromptPart, len(x))
		for i, raw := range x {
			part, problem := decodePart(raw)
			if problem != "" {
				is.add(fmt.Sprintf("%s[%d]", path, i), "%s", problem)
			}
			parts[i] = part
		}
		return Prompt{Parts: parts}
	}
	is.add(path, "expected a string or a list of parts, got %s", describe(v))
	return Prompt{}
}
