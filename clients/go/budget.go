package sessiond

import (
	"context"
)

// VerbBudget shows and changes a session's budget (the trusted subject only: a tenant's change is
// refused permission_denied).
const VerbBudget = "budget"

// CodeBudgetExceeded is the error type of a turn stopped before a model call because its session
// (or the session's tenant) has spent its budget: the settled turn's Error.Type, and what
// Prompt's outcome carries.
const CodeBudgetExceeded = "budget_exceeded"

// BudgetRequest changes a session's budget: Tokens or CostUSD set a limit (nil keeps it),
// ClearTokens or ClearCost remove one, Reset counts the session's spend from now on. The zero
// request only shows the budget.
type BudgetRequest struct {
	Tokens      *int64
	CostUSD     *float64
	ClearTokens bool
	ClearCost   bool
	Reset       bool
	Actor       string
}

// Spend is what a session has spent since its budget's latest reset: tokens (input + output) and
// US dollars (priced calls only).
type Spend struct {
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"costUsd"`
}

// Budget is a session's budget: its limits (nil: none) and its spend since the latest reset.
type Budget struct {
	Tokens  *int64   `json:"tokens"`
	CostUSD *float64 `json:"costUsd"`
	Spent   Spend    `json:"spent"`
}

// TenantBudget is a tenant's budget, as a session's Status shows it: what all of the tenant's
// sessions may spend together (nil: no limit), what they spent since Since (ms since the epoch:
// the budget set first, or its latest reset). The admin sets it: sessiond budget --tenant T.
type TenantBudget struct {
	Tokens  *int64   `json:"tokens"`
	CostUSD *float64 `json:"costUsd"`
	Spent   Spend    `json:"spent"`
	Since   int64    `json:"since"`
}

// BudgetResult is a session's budget after a Budget call (Budget nil: none set), its spend, its
// usage totals, and whether a budget.set event was written (Seq, its sequence).
type BudgetResult struct {
	SessionID string  `json:"sessionId"`
	Budget    *Budget `json:"budget"`
	Spent     Spend   `json:"spent"`
	Usage     Usage   `json:"usage"`
	Changed   bool    `json:"changed"`
	Seq       int64   `json:"seq,omitempty"`
}

// BudgetBody is the budget request's JSON body, in the schema's field order.
func BudgetBody(sessionID string, r BudgetRequest) Map {
	m := Map{{"sessionId", sessionID}}
	if r.ClearTokens {
		m = append(m, MapEntry{"tokens", nil})
	} else if r.Tokens != nil {
		m = append(m, MapEntry{"tokens", *r.Tokens})
	}
	if r.ClearCost {
		m = append(m, MapEntry{"costUsd", nil})
	} else if r.CostUSD != nil {
		m = append(m, MapEntry{"costUsd", *r.CostUSD})
	}
	if r.Reset {
		m = append(m, MapEntry{"reset", true})
	}
	if r.Actor != "" {
		m = append(m, MapEntry{"actor", r.Actor})
	}
	return m
}

// Budget shows the session's budget and spend, changing it first when r asks to. A turn whose
// session has spent its budget stops before its next model call and settles failed with error
// type CodeBudgetExceeded. A negative limit is refused (invalid_option); on a tenant's connection a
// change is refused (permission_denied): the admin changes budgets.
//
//	n := int64(100_000)
//	res, err := c.Budget(ctx, "ses_1", sessiond.BudgetRequest{Tokens: &n})
func (c *Client) Budget(ctx context.Context, sessionID string, r BudgetRequest) (BudgetResult, error) {
	var reply struct {
		Result BudgetResult `json:"result"`
	}
	_, err := c.send(ctx, VerbBudget, sessionID, BudgetBody(sessionID, r), "", &reply)
	return reply.Result, err
}
