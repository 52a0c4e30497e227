"""``agentcache template`` on the real models' chat templates (the ones llama.cpp ships in its sdist).

The audit renders on the client only, so no server is started per template; the llama-server fixture is what
installs the sdist. One test loops over every template (a fresh machine has the sdist only after collection).
The causes asserted are the ones the issue names, on the templates it names; the templates asserted clean are
those whose every turn extends the previous one on llama.cpp.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcache import cli
from agentcache.lint.template import BY_CAUSE, REFUSES
from agentcache.predict import causes
from tests.conftest import EngineInfo, engine_script
from tests.servers.realtemplates import TEMPLATES, templates

DRIFT_CODES = {rule.code for rule in BY_CAUSE.values()}
EXPECTED = {
    "Qwen-Qwen3-0.6B": {causes.TEMPLATE_DROPS_REASONING},
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B": {causes.TEMPLATE_DROPS_REASONING},
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": {causes.TEMPLATE_DROPS_REASONING},
    "meta-llama-Llama-3.2-3B-Instruct": {causes.TEMPLATE_DATE},
    "mistralai-Mistral-Nemo-Instruct-2407": {causes.TEMPLATE_MOVES_TOOLS, causes.TEMPLATE_MOVES_SYSTEM},
    "Mistral-Small-3.2-24B-Instruct-2506": {causes.TEMPLATE_MOVES_TOOLS},
}
CLEAN = ("Qwen-Qwen2.5-7B-Instruct", "microsoft-Phi-3.5-mini-instruct", "HuggingFaceTB-SmolLM3-3B")


def folder(template: Path, into: Path) -> Path:
    """A model folder: the test model's tokenizer, ``template`` as its ``chat_template.jinja``."""
    into.mkdir()
    (into / "tokenizer.json").symlink_to(engine_script.MODEL_DIR / "tokenizer.json")
    (into / "tokenizer_config.json").write_text((engine_script.MODEL_DIR / "tokenizer_config.json").read_text())
    (into / "chat_template.jinja").write_text(template.read_text())
    return into


@pytest.fixture(scope="module")
def installed(llama_server: EngineInfo) -> EngineInfo:
    return llama_server


def test_the_audit_names_the_template_causes(
    installed: EngineInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = templates()
    assert len(chosen) >= 30, f"the real templates are missing from {TEMPLATES}"
    found: dict[str, set[str]] = {}
    for template in chosen:
        model = folder(template, tmp_path / template.stem)
        code = cli.main(["template", str(model), "--format", "json"])
        findings = json.loads(capsys.readouterr().out)["findings"]
        assert code == (1 if findings else 0), template.stem
        for finding in findings:  # each drift finding is placed at the template line that does it
            assert finding["path"] == str(model / "chat_template.jinja")
            if finding["code"] in DRIFT_CODES:
                assert f"(template line {finding['line']}: " in finding["message"], finding
        found[template.stem] = {f["code"] for f in findings}
    for name, expected in EXPECTED.items():
        assert {BY_CAUSE[cause].code for cause in expected} <= found[name], (name, found[name])
    for name in CLEAN:
        assert not found[name] & DRIFT_CODES, (name, found[name])
    assert REFUSES.code in found["mistralai-Mistral-Nemo-Instruct-2407"]  # roles must alternate


def test_sarif_names_the_command_and_places_results_on_the_template(
    installed: EngineInfo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = folder(TEMPLATES / "Qwen-Qwen3-0.6B.jinja", tmp_path / "qwen3")
    assert cli.main(["template", str(model), "--format", "sarif"]) == 1
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert run["tool"]["driver"]["name"] == "agentcache template"
    (result,) = run["results"]
    assert result["ruleId"] == BY_CAUSE[causes.TEMPLATE_DROPS_REASONING].code
    region = result["locations"][0]["physicalLocation"]["region"]
    line = (model / "chat_template.jinja").read_text().splitlines()[region["startLine"] - 1]
    assert "reasoning_content" in line
