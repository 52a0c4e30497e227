"""The Python breakpoint rules (AC120-AC122) on request literals built in code, and a correct one without findings."""

from __future__ import annotations

import textwrap
from pathlib import Path

from agentcache.lint import lint_paths, rules


def codes(tmp_path: Path, source: str) -> list[tuple[int, str]]:
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(source))
    return [(f.line, f.code) for f in lint_paths([path]).findings if f.code.startswith("AC12")]


def test_the_rules_are_in_the_catalogue() -> None:
    assert [rules()[code].name for code in ("AC120", "AC121", "AC122")] == [
        "too-many-cache-breakpoints",
        "cache-ttl-order",
        "breakpoint-on-volatile-block",
    ]


def test_a_correctly_marked_request_has_no_finding(tmp_path: Path) -> None:
    assert (
        codes(
            tmp_path,
            """
        client.messages.create(
            model="claude-opus-4-8",
            tools=[{"name": "read", "input_schema": {}, "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            system=[{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}],
            messages=history,
            cache_control={"type": "ephemeral"},
        )
    """,
        )
        == []
    )


def test_more_than_four_breakpoints_counting_the_automatic_one(tmp_path: Path) -> None:
    assert codes(
        tmp_path,
        """
        client.messages.create(
            system=[{"type": "text", "text": "0"}] + [
                {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "c", "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "d", "cache_control": {"type": "ephemeral"}},
            ],
            cache_control={"type": "ephemeral"},
        )
    """,
    ) == [(2, "AC120")]


def test_a_one_hour_ttl_after_a_five_minute_one_in_prompt_order(tmp_path: Path) -> None:
    # messages come after tools in the prompt, whatever the keyword order in the call
    assert codes(
        tmp_path,
        """
        client.messages.create(
            messages=[{"role": "user", "content": [{"type": "text", "text": "q",
                       "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}],
            tools=[{"name": "read", "input_schema": {}, "cache_control": {"type": "ephemeral"}}],
        )
    """,
    ) == [(2, "AC121")]


def test_a_marked_block_holding_the_time_or_a_fresh_id(tmp_path: Path) -> None:
    assert codes(
        tmp_path,
        """
        import uuid
        from datetime import datetime

        client.messages.create(
            system=[
                {"type": "text", "text": SYSTEM},
                {"type": "text", "text": f"Now: {datetime.now()}", "cache_control": {"type": "ephemeral"}},
            ],
            messages=[{"role": "user", "content": [{"type": "text", "text": f"req {uuid.uuid4()}",
                       "prompt_cache_breakpoint": {"mode": "explicit"}}]}],
        )
    """,
    ) == [(8, "AC122"), (10, "AC122")]
