package sessiond

// How long a string is, and where it is cut, as sessiond counts: its schemas (zod 4's string min
// and max) count Unicode code points; its hand-written checks and the text its messages show of a
// value count UTF-16 units (JavaScript's .length and .slice). A Go string holds a lone UTF-16
// surrogate as its WTF-8 bytes (wire.ParseJSON keeps one so; wire.AppendJSON writes it back as
// \uXXXX).

import (
	"github.com/sessiond/sessiond/clients/go/internal/wire"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// utf16Len is a string's length in UTF-16 units, as JavaScript's `.length` counts it: what
// sessiond's hand-written command checks measure (a tag value's 256 in src/events/tags.ts), unlike
// its schemas (codePoints).
func utf16Len(s string) int {
	n := 0
	for i := 0; i < len(s); n++ {
		r, size := utf8.DecodeRuneInString(s[i:])
		if size == 1 && isSurrogateAt(s, i) {
			size = 3 // a lone surrogate's WTF-8 bytes: one unit
		} else if r >= 0x10000 {
			n++
		}
		i += size
	}
	return n
}

// utf16Prefix is s cut to its first n UTF-16 units, as JavaScript's s.slice(0, n) cuts it (the
// text sessiond's messages show of a long value): a pair cut in half leaves its high surrogate,
// held as its WTF-8 bytes (wire.AppendJSON writes it as \uXXXX, as JSON.stringify does).
func utf16Prefix(s string, n int) string {
	units := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if size == 1 && isSurrogateAt(s, i) {
			size = 3
		}
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			if units < n { // half of a pair fits: its high surrogate
				hi, _ := utf16.EncodeRune(r)
				return s[:i] + string([]byte{0xed, byte(0xa0 | (hi>>6)&0x0f), byte(0x80 | hi&0x3f)})
			}
			return s[:i]
		}
		units += w
		i += size
	}
	return s
}

// codePoints is a string's length as zod 4's string min and max measure it (the catalog's
// schemas): Unicode code points of the string JavaScript holds, so a character outside the BMP
// (an emoji) is one, not the two UTF-16 units of its `.length`. A lone surrogate, which a string
// holds as its WTF-8 bytes, is one; a high one's bytes followed by a low one's are one, the pair
// JavaScript makes of them; any other byte of invalid UTF-8 is one.
func codePoints(s string) int {
	n := 0
	for i := 0; i < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		if size == 1 && isSurrogateAt(s, i) {
			size = 3 // a lone surrogate's WTF-8 bytes
			if s[i+1] <= 0xaf && isSurrogateAt(s, i+3) && s[i+4] >= 0xb0 {
				size = 6 // a high surrogate then a low one: one character to JavaScript
			}
		}
		i += size
	}
	return n
}

// isSurrogateAt reports whether s holds the WTF-8 bytes of a UTF-16 surrogate (ED A0-BF 80-BF) at i.
func isSurrogateAt(s string, i int) bool {
	return i+2 < len(s) && s[i] == 0xed && s[i+1] >= 0xa0 && s[i+1] <= 0xbf && s[i+2] >= 0x80 && s[i+2] <= 0xbf
}

// quoteJSON is s as JSON.stringify quotes it (strconv's quoting when s is not text JSON can hold).
func quoteJSON(s string) string {
	if b, err := wire.AppendJSON(nil, s); err == nil {
		return string(b)
	}
	return strconv.Quote(s)
}
