package sessiond

// Tenant mode against a real nats-server whose nats.conf holds two tenant users (as `sessiond setup
// --tenant NAME` prints them, testdata/tenant_world.ts) and a real worker.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	theTenantWorld  *world
	tenantWorldErr  error
	tenantWorldOnce sync.Once
)

func getTenantWorld(t *testing.T) *world {
	t.Helper()
	tenantWorldOnce.Do(func() {
		theTenantWorld, tenantWorldErr = startWorldScript("clients/go/testdata/tenant_world.ts",
			"acme=acme-go-tenant-secret-0123456789", "globex=globex-go-tenant-secret-0123456789")
	})
	if tenantWorldErr != nil {
		t.Fatalf("could not start the tenant world (node --import tsx clients/go/testdata/tenant_world.ts in %s): %v", repoRoot(), tenantWorldErr)
	}
	return theTenantWorld
}

// connectTenant is a client of the tenant world acting as tenant (its user tenant-<tenant>).
func connectTenant(t *testing.T, w *world, tenant string) *Client {
	t.Helper()
	u := w.users["tenant-"+tenant]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Connect(ctx, Options{URL: w.url, User: u.User, Pass: u.Pass, Tenant: tenant, Logf: t.Logf})
	if err != nil {
		t.Fatalf("connect as tenant %s: %v", tenant, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func codeOf(err error) string {
	var cerr *CommandError
	if errors.As(err, &cerr) {
		return cerr.Code
	}
	return ""
}

func TestTenantOptionChecked(t *testing.T) {
	_, err := Connect(context.Background(), Options{URL: "nats://127.0.0.1:1", Tenant: "a.b"})
	if codeOf(err) != CodeInvalidOption || !strings.Contains(err.Error(), "a.b") {
		t.Fatalf("a tenant with a dot: %v", err)
	}
	if got := TenantCommandSubject("acme", VerbAdmit); got != "sessiond.t.acme.cmd.admit" {
		t.Fatalf("TenantCommandSubject: %s", got)
	}
	if got := TenantLiveSubject("acme", "ses_1", "step.started"); got != "sessiond.t.acme.live.ses_1.step.started" {
		t.Fatalf("TenantLiveSubject: %s", got)
	}
}

func TestTenantCommandsEventsAndSubscribe(t *testing.T) {
	w := getTenantWorld(t)
	acme := connectTenant(t, w, "acme")
	globex := connectTenant(t, w, "globex")
	ctx := context.Background()
	session := newSession(t)
	if got := acme.Tenant(); got != "acme" {
		t.Fatalf("Tenant() = %q", got)
	}

	col := &collector{}
	sub, err := acme.Subscribe(ctx, session, 0, col.handle, col.options()...)
	if err != nil {
		t.Fatalf("subscribe as acme: %v", err)
	}
	defer sub.Close()
	if want := "sessiond.t.acme.live." + session + ".>"; sub.Subject() != want {
		t.Fatalf("subject %s, want %s", sub.Subject(), want)
	}

	if _, err := acme.Admit(ctx, session, AdmitRequest{Prompt: "hello as acme"}); err != nil {
		t.Fatalf("admit as acme: %v", err)
	}
	var st Status
	waitFor(t, 30*time.Second, "the turn to settle", func() bool {
		st, err = acme.Status(ctx, session, 0)
		return err == nil && st.State == "settled"
	})
	if !strings.Contains(string(st.Raw), `"ownedBy":"acme"`) {
		t.Fatalf("status does not say the session is acme's: %s", st.Raw)
	}

	events, err := acme.Events(ctx, session, EventsOptions{})
	if err != nil {
		t.Fatalf("events as acme: %v", err)
	}
	if int64(len(events)) != st.Seq || events[0].Seq != 1 {
		t.Fatalf("%d events (seqs %v), the status says seq %d", len(events), seqsOf(events), st.Seq)
	}
	// a tenant's live message is checked against its tenant subject, as sessiond.live's are
	data, err := EncodeLiveMessage(events[0])
	if err != nil {
		t.Fatal(err)
	}
	if e, err := DecodeTenantLiveMessage(data, TenantLiveSubject("acme", session, events[0].Type), "acme"); err != nil || e.ID != events[0].ID {
		t.Fatalf("decode on the tenant subject: %v", err)
	}
	for _, subject := range []string{LiveSubject(session, events[0].Type), TenantLiveSubject("globex", session, events[0].Type), TenantLiveSubject("acme", "ses_other", events[0].Type)} {
		var derr *DecodeError
		if _, err := DecodeTenantLiveMessage(data, subject, "acme"); !errors.As(err, &derr) || derr.Code != CodeDecodeFailed {
			t.Fatalf("decode as acme's on %s: %v", subject, err)
		}
	}
	replayed, err := acme.Replay(ctx, session)
	if err != nil || len(replayed) != len(events) {
		t.Fatalf("replay as acme: %d events, %v", len(replayed), err)
	}
	after, err := acme.Replay(ctx, session, AfterSeq(2))
	if err != nil || len(after) != len(events)-2 || after[0].Seq != 3 {
		t.Fatalf("replay after seq 2 as acme: seqs %v, %v", seqsOf(after), err)
	}
	if _, err := acme.ReplayAll(ctx); codeOf(err) != CodePermissionDenied || !strings.Contains(err.Error(), "tenant acme") {
		t.Fatalf("replay of the whole log as a tenant: %v", err)
	}

	// the subscription saw every committed event once, in order, and live-only ones too
	waitFor(t, 15*time.Second, "the subscription to deliver every event", func() bool { return int64(len(col.committed())) >= st.Seq })
	got := col.committed()
	for i, e := range got {
		if e.Seq != int64(i+1) || e.ID != events[i].ID {
			t.Fatalf("delivered seqs %v, ids differ from events at %d", seqsOf(got), i)
		}
	}
	if !col.has(isType("text.delta")) {
		t.Fatalf("no live-only event (text.delta) on the tenant's live subject")
	}
	if len(col.invalid) != 0 || len(col.errs) != 0 {
		t.Fatalf("invalid %v, errors %v", col.invalid, col.errs)
	}

	// another tenant: the session is unknown, whatever it asks
	if _, err := globex.Status(ctx, session, 0); codeOf(err) != CodeUnknownSession {
		t.Fatalf("status of acme's session as globex: %v", err)
	}
	if _, err := globex.Events(ctx, session, EventsOptions{}); codeOf(err) != CodeUnknownSession {
		t.Fatalf("events of acme's session as globex: %v", err)
	}
	// admit reaches the log, whose append refuses another owner's session (not_found)
	if _, err := globex.Admit(ctx, session, AdmitRequest{Prompt: "globex barging in"}); codeOf(err) != "not_found" {
		t.Fatalf("admit to acme's session as globex: %v", err)
	}
	if other, err := globex.Replay(ctx, session); err != nil || len(other) != 0 {
		t.Fatalf("replay of acme's session as globex: %d events, %v", len(other), err)
	}
}

// A subscription started after the events catches up through the events command (no JetStream).
func TestTenantSubscribeCatchUp(t *testing.T) {
	w := getTenantWorld(t)
	acme := connectTenant(t, w, "acme")
	ctx := context.Background()
	session := newSession(t)
	if _, err := acme.Admit(ctx, session, AdmitRequest{Prompt: "before the subscription"}); err != nil {
		t.Fatalf("admit: %v", err)
	}
	var st Status
	var err error
	waitFor(t, 30*time.Second, "the turn to settle", func() bool {
		st, err = acme.Status(ctx, session, 0)
		return err == nil && st.State == "settled"
	})
	col := &collector{}
	sub, err := acme.Subscribe(ctx, session, 1, col.handle, append(col.options(), CatchUp())...)
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	defer sub.Close()
	waitFor(t, 15*time.Second, "the catch-up", func() bool { return int64(len(col.committed())) >= st.Seq-1 })
	got := col.committed()
	if got[0].Seq != 2 || got[len(got)-1].Seq != st.Seq || sub.Stats().Backfilled != st.Seq-1 {
		t.Fatalf("caught up seqs %v (stats %+v), head %d", seqsOf(got), sub.Stats(), st.Seq)
	}
}
