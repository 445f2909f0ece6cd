"""Every length limit of the catalog counts as zod 4's string min and max count (Unicode code points,
src/events/catalog.ts): a limit of N takes N emoji and refuses N+1, where a count of UTF-16 units
would refuse N/2+1. Verdicts as sessiond's own reader gives them (parsePayload, checked by hand
against zod 4.6)."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from sessiond_client import EventError, SessiondError, event_from_frame, stringify
from sessiond_client.commands import list_filter_problem, list_request
from sessiond_client.events import _preview
from sessiond_client.ids import validate_id
from sessiond_client.lengths import code_points, utf16_prefix

EMOJI = "😀"  # U+1F600: one code point, two UTF-16 units
LONE = "\ud800"  # a lone high surrogate: one
PAIR = "\ud83d\ude00"  # 😀 held as two surrogate code points: one character to JavaScript


def _admitted(**fields: Any) -> dict[str, Any]:
    return {"inputId": "i", "prompt": "p", "delivery": "queue", "wake": True, **fields}


def _file_part(name: str) -> dict[str, Any]:
    return _admitted(prompt=[{"type": "file", "data": "AAAA", "mediaType": "text/csv", "filename": name}])


# each limit of the catalog: a name, the limit, the event type and the payload that holds s where the limit applies
LIMITS: list[tuple[str, int, str, Callable[[str], dict[str, Any]]]] = [
    ("an id", 128, "execution.started", lambda s: {"executionId": s}),
    ("a cancel reason", 1000, "execution.cancelled", lambda s: {"executionId": "e", "reason": s}),
    ("a drop reason", 1000, "input.dropped", lambda s: {"inputIds": ["i"], "reason": s}),
    ("a wait's name", 200, "wait.started", lambda s: {"executionId": "e", "kind": "signal", "name": s}),
    ("a resolved wait's name", 200, "wait.resolved", lambda s: {"executionId": "e", "kind": "signal", "name": s, "outcome": "delivered"}),
    ("a wait's reason", 1000, "wait.resolved", lambda s: {"executionId": "e", "kind": "approval", "name": "c", "outcome": "denied", "reason": s}),
    ("a tag value", 256, "session.tagged", lambda s: {"tags": {"customer": s}}),
    ("an admission's tag value", 256, "input.admitted", lambda s: _admitted(tags={"customer": s})),
    ("a file part's name", 256, "input.admitted", _file_part),
]


def _accepted(typ: str, payload: dict[str, Any]) -> bool:
    frame = {"id": "evt_1", "type": typ, "version": 2 if typ == "input.admitted" else 1, "sessionId": "ses_1", "seq": 1, "time": 5, "payload": payload}
    try:
        event_from_frame(frame)
    except EventError as err:
        assert err.code == "invalid_payload", err.message
        return False
    return True


@pytest.mark.parametrize("name, limit, typ, payload", LIMITS, ids=[name for name, *_ in LIMITS])
def test_a_length_limit_counts_code_points(name: str, limit: int, typ: str, payload: Callable[[str], dict[str, Any]]) -> None:
    cases = [
        (EMOJI * limit, True, "exactly the limit in emoji"),
        (EMOJI * (limit + 1), False, "one emoji over the limit"),
        (EMOJI * (limit - 1) + "x", True, "emoji and one letter, at the limit"),
        (EMOJI * limit + "x", False, "emoji and one letter, one over"),
        (EMOJI * (limit - 1) + LONE, True, "emoji and a lone surrogate, at the limit"),
        (EMOJI * (limit - 1) + LONE + LONE, False, "emoji and two lone surrogates, one over"),
        (EMOJI * (limit - 1) + PAIR, True, "emoji and a surrogate pair held as two code points, at the limit"),
    ]
    wrong = [f"{what}: {'refused' if accepted else 'accepted'}" for s, accepted, what in cases if _accepted(typ, payload(s)) != accepted]
    assert not wrong, f"{name} (limit {limit}): {wrong}"


@pytest.mark.parametrize(
    "s, n",
    [
        ("", 0),
        ("abc", 3),
        ("Zoë", 3),
        ("e\u0301", 2),  # a combining mark is its own code point
        ("😀😀", 2),
        ("👍🏽", 2),  # an emoji and its skin tone: two code points, one grapheme
        ("a\ud800b", 3),
        ("\udc00\ud800", 2),  # a low then a high: two lone ones
        ("\ud83d\ude00", 1),  # a high then a low: 😀
        ("\ud800\ud800", 2),
    ],
)
def test_code_points_count_as_zod_counts(s: str, n: int) -> None:
    assert code_points(s) == n


def test_filter_tag_values_count_as_a_worker_counts() -> None:
    """A list filter's tags are checked before they are sent as a worker checks them (src/events/tags.ts
    counts a value's UTF-16 units, JavaScript's .length: an emoji is two), so what the client lets through
    the worker takes, and what it refuses the worker would refuse with the same words."""
    for value, ok in ((EMOJI * 128, True), (EMOJI * 128 + "x", False), ("é" * 256, True), ("é" * 257, False)):
        problem = list_filter_problem(list_request(tags={"k": value}))
        assert (problem is None) == ok, (len(value), problem)
        assert ok or "a value is a string of 1 to 256 characters" in str(problem)


def test_messages_count_as_sessiond_counts() -> None:
    """Messages show a long value cut as sessiond cuts it (JavaScript's slice: UTF-16 units, so half a
    pair can be left, and JSON.stringify writes it as \\ud83d), and an id's length counted as sessiond counts it."""
    for s, n, want in (
        ("abc", 2, "ab"),
        ("abc", 5, "abc"),
        ("a😀b", 3, "a😀"),
        ("a😀b", 2, "a\ud83d"),
        ("a😀b", 1, "a"),
        ("é日本", 2, "é日"),
        ("\ud800ab", 2, "\ud800a"),
    ):
        assert utf16_prefix(s, n) == want, (s, n)
    assert stringify(utf16_prefix("x" + EMOJI * 50, 80)) == '"x' + EMOJI * 39 + '\\ud83d"'
    assert _preview(EMOJI * 70) == '"' + EMOJI * 59 + "\ud83d..."
    problem = list_filter_problem(list_request(tags={"k": "x" + EMOJI * 128}))
    assert problem is not None and ' = "x' + EMOJI * 39 + '\\ud83d": ' in problem
    for id_, why in (
        ("é" * 100, 'it contains "é"'),  # 100 units: within the length
        (EMOJI * 64, 'it contains "😀"'),  # 128 units
        (EMOJI * 65, "it is 130 characters long"),
        ("x" * 129, "it is 129 characters long"),
    ):
        with pytest.raises(SessiondError) as caught:
            validate_id(id_, "session id")
        assert f": {why}. Use 1-128 characters" in caught.value.message, caught.value.message
