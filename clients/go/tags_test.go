package sessiond

// Tags and list against the test world: three sessions admitted with a tag of this run, one of
// them tagged, listed by the tag two to a page (newest first, each once), their tags in status;
// tag on a session with no events is unknown_session, and bad filters and tags are refused.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestTagsAndListEndToEnd(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	run := newSession(t) // a tag value no other run's sessions carry
	no := false

	var sessions []string
	for i := range 3 {
		s := newSession(t)
		tags := Tags{"go-run": run, "n": strconv.Itoa(i)}
		r, err := c.Admit(ctx, s, AdmitRequest{Prompt: fmt.Sprintf("tagged %d", i), Wake: &no, Tags: tags})
		if err != nil || !r.Created || r.Wake || r.AdmittedSeq != 1 {
			t.Fatalf("admit %s: %+v %v", s, r, err)
		}
		st, err := c.Status(ctx, s, 0)
		if err != nil || !maps.Equal(st.Tags, tags) || len(st.Pending) != 1 || !maps.Equal(st.Pending[0].Tags, tags) {
			t.Fatalf("status of %s: %s %v", s, st.Raw, err)
		}
		sessions = append(sessions, s)
	}

	// tag the middle one: set one, remove another, then the same again (no change)
	tagged := sessions[1]
	want := Tags{"go-run": run, "tier": "gold"}
	res, err := c.Tag(ctx, tagged, TagRequest{Set: Tags{"tier": "gold"}, Remove: []string{"n"}})
	if err != nil || res.SessionID != tagged || !res.Changed || res.Seq != 2 || !maps.Equal(res.Tags, want) {
		t.Fatalf("tag: %+v %v", res, err)
	}
	again, err := c.Tag(ctx, tagged, TagRequest{Set: Tags{"tier": "gold"}, Remove: []string{"n", "absent"}})
	if err != nil || again.Changed || again.Seq != 0 || !maps.Equal(again.Tags, want) {
		t.Fatalf("tag again: %+v %v", again, err)
	}
	st, err := c.Status(ctx, tagged, 0)
	if err != nil || st.Seq != 2 || !maps.Equal(st.Tags, want) {
		t.Fatalf("status after the tag: %s %v", st.Raw, err)
	}
	events, err := c.Replay(ctx, tagged)
	if err != nil {
		t.Fatal(err)
	}
	if p := only[*SessionTagged](t, events); len(p.Tags) != 2 || p.Tags["n"] != nil || p.Tags["tier"] == nil || *p.Tags["tier"] != "gold" {
		t.Fatalf("session.tagged %s", show(p))
	}
	if p := inputAdmitted(t, events, st.Pending[0].InputID); !maps.Equal(p.Tags, Tags{"go-run": run, "n": "1"}) {
		t.Fatalf("input.admitted %s", show(p))
	}

	// list by the run's tag, two to a page: the worker's projection follows the stream, so poll
	// until it has all three (and the tag change)
	filter := ListFilter{Tags: Tags{"go-run": run}, Limit: 2}
	var pages []SessionPage
	var listed []SessionListItem
	waitFor(t, 15*time.Second, "the three sessions to be listed", func() bool {
		pages, listed = nil, nil
		f := filter
		for {
			page, err := c.List(ctx, f)
			if err != nil {
				t.Fatalf("list %+v: %v", f, err)
			}
			pages = append(pages, page)
			listed = append(listed, page.Sessions...)
			if page.Next == "" || len(pages) > 3 {
				break
			}
			f.After = page.Next
		}
		return len(listed) == 3 && slices.ContainsFunc(listed, func(s SessionListItem) bool { return s.SessionID == tagged && s.Tags["tier"] == "gold" })
	})
	if len(pages) != 2 || len(pages[0].Sessions) != 2 || pages[0].Next == "" || len(pages[1].Sessions) != 1 || pages[1].Next != "" {
		t.Fatalf("pages %s", show(pages))
	}
	// newest first (by creation time, then session id), each session once
	order := slices.Clone(listed)
	slices.SortStableFunc(order, func(a, b SessionListItem) int {
		if a.CreatedAt != b.CreatedAt {
			return cmp.Compare(b.CreatedAt, a.CreatedAt)
		}
		return strings.Compare(b.SessionID, a.SessionID)
	})
	var ids []string
	for i, s := range listed {
		if s.SessionID != order[i].SessionID {
			t.Fatalf("not newest first: %s", show(listed))
		}
		ids = append(ids, s.SessionID)
	}
	if !slices.Equal(slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(sessions))) {
		t.Fatalf("listed %v, admitted %v", ids, sessions)
	}
	newestFirst := slices.Clone(sessions)
	slices.Reverse(newestFirst)
	if listed[0].CreatedAt > listed[1].CreatedAt && listed[1].CreatedAt > listed[2].CreatedAt && !slices.Equal(ids, newestFirst) {
		t.Fatalf("listed %v, admitted %v (created apart)", ids, sessions)
	}
	for _, s := range listed {
		wantTags := Tags{"go-run": run, "n": strconv.Itoa(slices.Index(sessions, s.SessionID))}
		wantSeq := int64(1)
		if s.SessionID == tagged {
			wantTags, wantSeq = want, 2
		}
		if s.State != "idle" || s.Waiting || s.PendingInputs != 1 || s.Seq != wantSeq || s.CreatedAt <= 0 || s.UpdatedAt < s.CreatedAt ||
			!maps.Equal(s.Tags, wantTags) || s.ForkedFrom != nil {
			t.Fatalf("listed %s", show(s))
		}
	}

	// more filters: two tags, a state none of them is in, waiting
	both, err := c.List(ctx, ListFilter{Tags: Tags{"go-run": run, "tier": "gold"}})
	if err != nil || len(both.Sessions) != 1 || both.Sessions[0].SessionID != tagged || both.Next != "" {
		t.Fatalf("list by two tags: %s %v", show(both), err)
	}
	yes := true
	for _, f := range []ListFilter{{Tags: filter.Tags, State: "settled"}, {Tags: filter.Tags, Waiting: &yes}} {
		page, err := c.List(ctx, f)
		if err != nil || page.Sessions == nil || len(page.Sessions) != 0 || page.Next != "" {
			t.Fatalf("list %+v: %s %v", f, show(page), err)
		}
	}
	// by id prefix: each id as the prefix, with the run's tag (no other session of the run starts with it)
	for _, id := range sessions {
		byPrefix, err := c.List(ctx, ListFilter{IDPrefix: id, Tags: filter.Tags})
		if err != nil || len(byPrefix.Sessions) != 1 || byPrefix.Sessions[0].SessionID != id {
			t.Fatalf("list by the id prefix %s: %s %v", id, show(byPrefix), err)
		}
	}
	idle, err := c.List(ctx, ListFilter{Tags: filter.Tags, State: "idle", Waiting: &no, UpdatedSince: listed[2].CreatedAt})
	if err != nil || len(idle.Sessions) != 3 {
		t.Fatalf("list idle, not waiting, updated since the first: %s %v", show(idle), err)
	}

	// a session with no events cannot be tagged
	nobody := newSession(t)
	_, err = c.Tag(ctx, nobody, TagRequest{Set: Tags{"tier": "gold"}})
	var ce *CommandError
	if !asCommandError(err, &ce) || ce.Code != CodeUnknownSession || ce.Verb != VerbTag || ce.Details["sessionId"] != nobody {
		t.Fatalf("tag of a session with no events: %v", err)
	}

	// refused by the worker: a cursor that is not a Next, a tag key or value it does not take
	if _, err := c.List(ctx, ListFilter{After: "nope"}); ErrorCode(err) != CodeInvalidOption || !strings.Contains(err.Error(), "not a cursor") {
		t.Fatalf("list after nope: %v", err)
	}
	if _, err := c.Tag(ctx, tagged, TagRequest{Set: Tags{"bad key": "v"}}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("tag with a bad key: %v", err)
	}
	if _, err := c.Admit(ctx, newSession(t), AdmitRequest{Prompt: "p", Wake: &no, Tags: Tags{"k": strings.Repeat("v", 257)}}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("admit with a value of 257 characters: %v", err)
	}
	// a command's tag value counts UTF-16 units at the worker (an emoji is two), as checkListFilter does here
	if _, err := c.Admit(ctx, newSession(t), AdmitRequest{Prompt: "p", Wake: &no, Tags: Tags{"k": strings.Repeat("😀", 128)}}); err != nil {
		t.Fatalf("admit with a value of 128 emoji: %v", err)
	}
	over := Tags{"k": "x" + strings.Repeat("😀", 128)} // 257 units; the message shows 80 of them, the last half an emoji
	_, err = c.Admit(ctx, newSession(t), AdmitRequest{Prompt: "p", Wake: &no, Tags: over})
	if ErrorCode(err) != CodeInvalidOption || !strings.Contains(err.Error(), "a value is a string of 1 to 256 characters") {
		t.Fatalf("admit with a value of a letter and 128 emoji: %v", err)
	}
	if _, ferr := c.List(ctx, ListFilter{Tags: over}); ErrorCode(ferr) != CodeInvalidOption ||
		ferr.(*CommandError).Message != strings.Replace(err.(*CommandError).Message, "the admission", "the filter", 1) {
		t.Fatalf("a filter of that value: %v (the worker: %v)", ferr, err)
	}
	// refused before it is sent
	if _, err := c.List(ctx, ListFilter{IDPrefix: "go run"}); ErrorCode(err) != CodeInvalidOption ||
		err.(*CommandError).Message != `Invalid list filter: idPrefix must be the start of a session id, 1-128 characters from A-Z a-z 0-9 _ - : + = @, got "go run".` {
		t.Fatalf("list by an id prefix with a space: %v", err)
	}
	if _, err := c.List(ctx, ListFilter{CalledBy: "ses lead"}); ErrorCode(err) != CodeInvalidOption ||
		err.(*CommandError).Message != `Invalid list filter: calledBy must be a session id, 1-128 characters from A-Z a-z 0-9 _ - : + = @, got "ses lead".` {
		t.Fatalf("list by a caller with a space: %v", err)
	}
	for _, f := range []ListFilter{{Limit: MaxListLimit + 1}, {Limit: -1}, {State: "asleep"}, {UpdatedSince: -1}, {Tags: Tags{"k": ""}}, {IDPrefix: "a.b"}, {CalledBy: "a.b"}} {
		if _, err := c.List(ctx, f); ErrorCode(err) != CodeInvalidOption || !strings.HasPrefix(err.(*CommandError).Message, "Invalid") {
			t.Fatalf("list %+v: %v", f, err)
		}
	}
	if _, err := c.Tag(ctx, tagged, TagRequest{Set: Tags{"tier": "gold"}, Remove: []string{"tier"}}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("tag setting and removing one key: %v", err)
	}
	if _, err := c.Tag(ctx, "ses.dot", TagRequest{Set: Tags{"tier": "gold"}}); ErrorCode(err) != CodeInvalidID {
		t.Fatalf("tag of an invalid session id: %v", err)
	}
}
