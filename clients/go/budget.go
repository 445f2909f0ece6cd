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

// BudgetBody is the budget request's JSON body, in the schema's field order.
func BudgetBody(sessionID string, r BudgetRequest) Map {
	m := Map{{Key: "sessionId", Value: sessionID}}
	if r.ClearTokens {
		m = append(m, MapEntry{Key: "tokens", Value: nil})
	} else if r.Tokens != nil {
		m = append(m, MapEntry{Key: "tokens", Value: *r.Tokens})
	}
	if r.ClearCost {
		m = append(m, MapEntry{Key: "costUsd", Value: nil})
	} else if r.CostUSD != nil {
		m = append(m, MapEntry{Key: "costUsd", Value: *r.CostUSD})
	}
	if r.Reset {
		m = append(m, MapEntry{Key: "reset", Value: true})
	}
	if r.Actor != "" {
		m = append(m, MapEntry{Key: "actor", Value: r.Actor})
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
