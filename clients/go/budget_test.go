package sessiond

// Budgets against the test world: the trusted client sets a session's token budget (one budget.set
// event, read back from the log), shows it, sees it in status, and a negative limit is refused.

import (
	"context"
	"encoding/json"
	"testing"
)

func TestBudgetEndToEnd(t *testing.T) {
	w := getWorld(t)
	c := w.connect(t, "client")
	ctx := context.Background()
	s := newSession(t)
	no := false
	if _, err := c.Admit(ctx, s, AdmitRequest{Prompt: "budgeted", Wake: &no}); err != nil {
		t.Fatal(err)
	}
	n := int64(5000)
	res, err := c.Budget(ctx, s, BudgetRequest{Tokens: &n, ClearCost: true, Actor: "go-admin"})
	if err != nil || !res.Changed || res.Seq != 2 || res.Budget == nil || res.Budget.Tokens == nil || *res.Budget.Tokens != 5000 || res.Budget.CostUSD != nil {
		t.Fatalf("set: %+v %v", res, err)
	}
	shown, err := c.Budget(ctx, s, BudgetRequest{})
	if err != nil || shown.Changed || shown.Budget == nil || *shown.Budget.Tokens != 5000 || shown.Spent.Tokens != 0 {
		t.Fatalf("show: %+v %v", shown, err)
	}
	st, err := c.Status(ctx, s, 0)
	if err != nil || st.Budget == nil || *st.Budget.Tokens != 5000 {
		t.Fatalf("status: %s %v", st.Raw, err)
	}
	events, err := c.Replay(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if p := only[*BudgetSet](t, events); p.Tokens == nil || *p.Tokens != 5000 || p.CostUSD != nil || p.Reset || p.Actor == nil || *p.Actor != "go-admin" {
		t.Fatalf("budget.set: %+v", p)
	}
	bad := int64(-1)
	if _, err := c.Budget(ctx, s, BudgetRequest{Tokens: &bad}); ErrorCode(err) != CodeInvalidOption {
		t.Fatalf("a negative budget: %v", err)
	}
}

// A status reply of a session whose tenant has a budget carries it; one without, nil.
func TestStatusTenantBudget(t *testing.T) {
	var st Status
	reply := `{"ok":true,"sessionId":"ses_1","ownedBy":"acme","tenantBudget":{"tokens":200,"costUsd":null,"spent":{"tokens":250,"costUsd":0.5},"since":1700000000000}}`
	if err := json.Unmarshal([]byte(reply), &st); err != nil {
		t.Fatal(err)
	}
	tb := st.TenantBudget
	if tb == nil || tb.Tokens == nil || *tb.Tokens != 200 || tb.CostUSD != nil || tb.Spent.Tokens != 250 || tb.Spent.CostUSD != 0.5 || tb.Since != 1700000000000 {
		t.Fatalf("tenant budget %+v", tb)
	}
	var none Status
	if err := json.Unmarshal([]byte(`{"ok":true,"sessionId":"ses_2","ownedBy":null}`), &none); err != nil || none.TenantBudget != nil {
		t.Fatalf("no tenant budget: %+v, %v", none.TenantBudget, err)
	}
}
