package sessiond

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Tags are the metadata a session carries (customer=acme, env=prod): set by an admission
// (AdmitRequest.Tags, merged into those it has) and changed with Tag; listed and filtered by List,
// shown by Status. A key is 1-64 letters, digits or _ . : / - starting with a letter or digit; a
// value 1-256 characters without control characters; a session carries at most MaxTags. They are
// written with their keys sorted, as sessiond stores them.
type Tags map[string]string

// TagChanges are the changes of a session.tagged event: a value sets the key, nil removes it.
type TagChanges map[string]*string

// Limits of tags (src/events/tags.ts).
const (
	MaxTags     = 32
	MaxTagValue = 256
)

var tagKeyRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/-]{0,63}$`)

// ValidTagKey reports whether key may be a tag's key.
func ValidTagKey(key string) bool { return tagKeyRe.MatchString(key) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // keys are ASCII: byte order is JavaScript's order
	return keys
}

// tagsMap is tags as a JSON object with its keys sorted.
func tagsMap(t Tags) Map {
	out := make(Map, 0, len(t))
	for _, k := range sortedKeys(t) {
		out = append(out, MapEntry{Key: k, Value: t[k]})
	}
	return out
}

// TagRequest changes a session's tags: Set sets each key to its value, Remove removes each key
// (a key absent already is no change). A key may not be both set and removed.
type TagRequest struct {
	Set    Tags
	Remove []string
}

// The states a session may be in (ListFilter.State, Status.State).
var SessionStates = []string{"idle", "claimed", "running", "recovering", "settled"}

// Limits of a list page.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// ListFilter selects the sessions List pages through (every field is optional: zero values
// select all): State one of SessionStates; Waiting true for sessions whose turn waits (an
// approval, a signal, a timer), false for those that do not; Tags every one of these tags;
// IDPrefix ids that start with this (1 to 128 of the characters an id holds);
// UpdatedSince an event at or after this time (ms since the epoch); Limit sessions per page (1 to
// MaxListLimit; 0: the worker's default of 50); After the Next of the previous page.
type ListFilter struct {
	State        string
	Waiting      *bool
	Tags         Tags
	IDPrefix     string
	UpdatedSince int64
	// ReachableBy: only sessions this owner reaches (its own, and those with no owner).
	ReachableBy string
	// CalledBy: only the children of this session (those its turn last called).
	CalledBy string
	Limit    int
	After    string
}

// SessionPage is a page of sessions, newest first (by creation time, then session id). Next is the
// cursor of the next page (ListFilter.After), "" when this page is the last.
type SessionPage struct {
	Sessions []SessionListItem
	Next     string
}

// TagBody is the tag request's JSON body: the keys set (sorted), then those removed (sorted, as
// null).
func TagBody(sessionID string, r TagRequest) Map {
	changes := tagsMap(r.Set)
	removed := slices.Clone(r.Remove)
	slices.Sort(removed)
	for _, k := range slices.Compact(removed) {
		changes = append(changes, MapEntry{Key: k, Value: nil})
	}
	return Map{{Key: "sessionId", Value: sessionID}, {Key: "tags", Value: changes}}
}

// ListBody is the list request's JSON body (zero fields left out).
func ListBody(f ListFilter) Map {
	m := Map{}
	if f.State != "" {
		m = append(m, MapEntry{Key: "state", Value: f.State})
	}
	if f.Waiting != nil {
		m = append(m, MapEntry{Key: "waiting", Value: *f.Waiting})
	}
	if len(f.Tags) > 0 {
		m = append(m, MapEntry{Key: "tags", Value: tagsMap(f.Tags)})
	}
	if f.IDPrefix != "" {
		m = append(m, MapEntry{Key: "idPrefix", Value: f.IDPrefix})
	}
	if f.UpdatedSince != 0 {
		m = append(m, MapEntry{Key: "updatedSince", Value: f.UpdatedSince})
	}
	if f.ReachableBy != "" {
		m = append(m, MapEntry{Key: "reachableBy", Value: f.ReachableBy})
	}
	if f.CalledBy != "" {
		m = append(m, MapEntry{Key: "calledBy", Value: f.CalledBy})
	}
	if f.Limit != 0 {
		m = append(m, MapEntry{Key: "limit", Value: int64(f.Limit)})
	}
	if f.After != "" {
		m = append(m, MapEntry{Key: "after", Value: f.After})
	}
	return m
}

// checkTags says what is wrong with tags (as sessiond words it; "" when they are valid).
func checkTags(t Tags, what string) string {
	if len(t) > MaxTags {
		return fmt.Sprintf("Invalid tags: %s has %d tags, over the limit of %d tags per session.", what, len(t), MaxTags)
	}
	for _, k := range sortedKeys(t) {
		if !ValidTagKey(k) {
			return fmt.Sprintf("Invalid tags: %s has the tag key %s: a key is 1 to 64 letters, digits or _ . : / -, starting with a letter or digit.", what, quoteJSON(utf16Prefix(k, 80)))
		}
		v := t[k]
		if n := utf16Len(v); n == 0 || n > MaxTagValue || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Sprintf("Invalid tags: %s has tag %s = %s: a value is a string of 1 to %d characters without control characters.", what, k, quoteJSON(utf16Prefix(v, 80)), MaxTagValue)
		}
	}
	return ""
}

// checkListFilter says what is wrong with a filter, in the words a worker would use ("" when it is
// valid; the cursor is the worker's to check).
func checkListFilter(f ListFilter) string {
	switch {
	case f.State != "" && !slices.Contains(SessionStates, f.State):
		return fmt.Sprintf("Invalid list filter: state must be one of %s, got %s.", strings.Join(SessionStates, ", "), strconv.Quote(f.State))
	case f.IDPrefix != "" && !ValidID(f.IDPrefix):
		return fmt.Sprintf("Invalid list filter: idPrefix must be the start of a session id, 1-128 characters from A-Z a-z 0-9 _ - : + = @, got %s.", quoteJSON(utf16Prefix(f.IDPrefix, 80)))
	case f.CalledBy != "" && !ValidID(f.CalledBy):
		return fmt.Sprintf("Invalid list filter: calledBy must be a session id, 1-128 characters from A-Z a-z 0-9 _ - : + = @, got %s.", quoteJSON(utf16Prefix(f.CalledBy, 80)))
	case f.UpdatedSince < 0 || f.UpdatedSince > maxSafeInteger:
		return fmt.Sprintf("Invalid list filter: updatedSince must be a time in whole milliseconds since the epoch, got %d.", f.UpdatedSince)
	case f.Limit < 0 || f.Limit > MaxListLimit:
		return fmt.Sprintf("Invalid list filter: limit must be a whole number from 1 to %d, got %d.", MaxListLimit, f.Limit)
	}
	return checkTags(f.Tags, "the filter")
}
