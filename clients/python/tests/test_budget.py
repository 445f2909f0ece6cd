"""Budgets against real workers: the trusted client sets a session's token budget (one
``budget.set`` event), shows it, sees it in ``status``; a negative limit is refused."""

from __future__ import annotations

import pytest
from conftest import session_name

from sessiond_client import CLEAR, BudgetResult, Client, CommandError, StatusReply

WORLD_WORKERS = 1


async def test_a_session_budget_is_set_shown_and_in_status(client: Client) -> None:
    session = session_name("ses_budget")
    await client.admit(session, "budgeted", wake=False)
    result = await client.budget(session, tokens=5000, cost_usd=CLEAR, actor="py-admin")
    assert isinstance(result, BudgetResult)
    assert (result.changed, result.seq) == (True, 2)
    assert result.budget == {"tokens": 5000, "costUsd": None, "spent": {"tokens": 0, "costUsd": 0}}
    shown = await client.budget(session)
    assert (shown.changed, shown.budget) == (False, result.budget)
    status = await client.status(session)
    assert status.budget == result.budget
    with pytest.raises(CommandError) as caught:
        await client.budget(session, tokens=-1)
    assert caught.value.code == "invalid_option"


def test_a_status_carries_the_tenants_budget_when_it_has_one() -> None:
    tenant = {"tokens": 200, "costUsd": None, "spent": {"tokens": 250, "costUsd": 0.5}, "since": 1700000000000}
    status = StatusReply.from_wire({"ok": True, "sessionId": "ses_1", "state": "settled", "seq": 3, "ownedBy": "acme", "tenantBudget": tenant})
    assert (status.owned_by, status.tenant_budget) == ("acme", tenant)
    assert StatusReply.from_wire({"ok": True, "sessionId": "ses_2", "state": "idle", "seq": 1}).tenant_budget is None
