"""Template-made causes in trace files: with the model folder, lint replays the trace through the model's own
template and reports a perfect agent's turns that the template breaks (AC4xx); without it, it cannot see them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcache import cli
from agentcache.lint.template import BY_CAUSE
from agentcache.predict import causes
from tests.predict.test_template_drift import MOVES_TOOLS, conversation


@pytest.fixture
def trace_and_model(model_dir: Path, tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer.json").symlink_to(model_dir / "tokenizer.json")
    (folder / "chat_template.jinja").write_text(MOVES_TOOLS)
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps({"session": "s", "request": r}) + "\n" for r in conversation()))
    return trace, folder


def test_lint_finds_the_template_cause_with_the_model_folder(
    trace_and_model: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    trace, folder = trace_and_model
    assert cli.main(["lint", str(trace), "--format", "json"]) == 0  # every request extends the one before
    capsys.readouterr()
    assert cli.main(["lint", str(trace), "--cache", "sglang", "--model-dir", str(folder), "--format", "json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert (finding["code"], finding["line"]) == (BY_CAUSE[causes.TEMPLATE_MOVES_TOOLS].code, 3)
    assert "template line 2: " in finding["message"]


def test_template_without_a_template_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["template", str(tmp_path)]) == 2
    assert "no chat template found" in capsys.readouterr().err


def test_a_clean_template_exits_0(trace_and_model: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Every turn of every shape extends the previous one, and no shape is refused. Each message ends with a
    marker, so that an empty reply's newline never merges with the generation prompt's into one token."""
    _, folder = trace_and_model
    ended = "{% for m in messages %}<{{ m.role }}>\n{{ m.content }}<end>\n{% endfor %}"
    (folder / "chat_template.jinja").write_text(ended + "{% if add_generation_prompt %}<assistant>\n{% endif %}")
    assert cli.main(["template", str(folder), "--server", "sglang"]) == 0
    assert capsys.readouterr().out == "All checks passed (1 file checked).\n"
