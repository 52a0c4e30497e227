"""A session's earlier relocated volatile lines stay where they were sent, so each turn's history is the bytes the
server cached: the clock of turn N sits after turn N's messages in every later request."""

from __future__ import annotations

import itertools
from typing import Any

from agentcache.canon import CanonicalPolicy, canonicalize
from agentcache.transport.sticky import RelocationMemory, appended_index

POLICY = CanonicalPolicy(relocate_volatile=True)


def system(turn: int) -> dict[str, Any]:
    return {"role": "system", "content": f"You plan days.\nNow: 2026-12-01T09:{turn:02d}:00Z\nBe brief."}


def clock(turn: int) -> dict[str, Any]:
    return {"role": "system", "content": f"Now: 2026-12-01T09:{turn:02d}:00Z"}


def send(memory: RelocationMemory, session: str, request: dict[str, Any]) -> list[Any]:
    """The messages the transport would send for ``request`` with no template to check, remembered."""
    canonical = canonicalize(request, POLICY)
    recalled = memory.recall(session, canonical, appended_index(canonical, request))
    memory.remember(recalled, recalled.index, False, recalled.body)
    messages: list[Any] = recalled.body["messages"]
    return messages


def test_each_turn_keeps_the_clock_lines_of_the_turns_before_where_they_were_sent() -> None:
    memory = RelocationMemory()
    history: list[dict[str, Any]] = []
    sent: list[list[Any]] = []
    steps = [
        [{"role": "user", "content": "Plan my day."}],
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "calendar", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "3 meetings"},
        ],
        [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "Add lunch."}],
    ]
    for turn, step in enumerate(steps):
        history += step
        sent.append(send(memory, "s", {"model": "m", "messages": [system(turn), *history]}))
    for before, now in itertools.pairwise(sent):
        assert now[: len(before)] == before  # the history is what was sent: the server's cached prefix
    assert sent[-1] == [
        {"role": "system", "content": "You plan days.\nBe brief."},
        steps[0][0],
        clock(0),
        *steps[1],
        clock(1),
        *steps[2],
        clock(2),
    ]


def test_a_resent_request_carries_its_own_clock_once() -> None:
    memory = RelocationMemory()
    first = [{"role": "user", "content": "Plan my day."}]
    send(memory, "s", {"messages": [system(0), *first]})
    again = send(memory, "s", {"messages": [system(1), *first]})
    assert again[1:] == [*first, clock(1)]
    answer = [{"role": "assistant", "content": "Ok."}, {"role": "user", "content": "Add lunch."}]
    later = send(memory, "s", {"messages": [system(2), *first, *answer]})
    assert later[1:] == [*first, clock(1), *answer, clock(2)]


def test_siblings_keep_their_parent_s_lines_and_never_each_other_s() -> None:
    memory = RelocationMemory()
    root = [{"role": "user", "content": "Plan my day."}]
    send(memory, "tree", {"messages": [system(0), *root]})
    for branch in range(1, 4):
        child = [*root, {"role": "assistant", "content": f"Option {branch}."}, {"role": "user", "content": "Go on."}]
        sent = send(memory, "tree", {"messages": [system(branch), *child]})
        assert sent[1:] == [root[0], clock(0), *child[1:], clock(branch)]


def test_nothing_carries_over_to_another_session_or_to_a_history_the_agent_rewrote() -> None:
    memory = RelocationMemory()
    first = [{"role": "user", "content": "Plan my day."}]
    send(memory, "a", {"messages": [system(0), *first]})
    follow = [*first, {"role": "assistant", "content": "Ok."}, {"role": "user", "content": "Add lunch."}]
    assert send(memory, "b", {"messages": [system(1), *follow]})[1:] == [*follow, clock(1)]
    rewritten = [{"role": "user", "content": "Plan my week."}, *follow[1:]]
    assert send(memory, "a", {"messages": [system(2), *rewritten]})[1:] == [*rewritten, clock(2)]


def test_a_request_without_volatile_lines_keeps_the_earlier_ones() -> None:
    memory = RelocationMemory()
    first = [{"role": "user", "content": "Plan my day."}]
    send(memory, "s", {"messages": [system(0), *first]})
    steady = {"role": "system", "content": "You plan days.\nBe brief."}
    follow = [*first, {"role": "assistant", "content": "Ok."}, {"role": "user", "content": "Add lunch."}]
    assert send(memory, "s", {"messages": [steady, *follow]}) == [steady, first[0], clock(0), *follow[1:]]


def test_memory_is_bounded_in_sessions() -> None:
    memory = RelocationMemory(sessions=2)
    first = [{"role": "user", "content": "Plan my day."}]
    for session in ("a", "b", "c"):
        send(memory, session, {"messages": [system(0), *first]})
    follow = [*first, {"role": "assistant", "content": "Ok."}, {"role": "user", "content": "Add lunch."}]
    assert send(memory, "a", {"messages": [system(1), *follow]})[1:] == [*follow, clock(1)]  # forgotten
    kept = send(memory, "c", {"messages": [system(1), *follow]})
    assert kept[1:] == [first[0], clock(0), *follow[1:], clock(1)]


def test_lines_the_history_already_holds_last_are_not_added_again() -> None:
    """A date that has not changed since the last turn is in the history already: the request adds no message, so
    it costs nothing; a new date is added after the turn that saw it."""
    memory = RelocationMemory()
    history: list[dict[str, Any]] = []
    sent = []
    for turn, day in enumerate((1, 1, 1, 2)):
        history.append({"role": "user", "content": f"Question {turn}."})
        prompt = {"role": "system", "content": f"You plan days.\nToday is 2026-12-0{day}.\nBe brief."}
        sent.append(send(memory, "s", {"messages": [prompt, *history]}))
        history.append({"role": "assistant", "content": f"Answer {turn}."})
    dates = [[m["content"] for m in messages if "Today" in m["content"]] for messages in sent]
    assert dates == [["Today is 2026-12-01."]] * 3 + [["Today is 2026-12-01.", "Today is 2026-12-02."]]
    assert sent[2][:3] == sent[0] and sent[3][-1]["content"] == "Today is 2026-12-02."
