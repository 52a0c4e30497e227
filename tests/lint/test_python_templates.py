"""Templates rendered into a system prompt: what the template prints or iterates of the objects passed to it flows
into the rendered text, and nothing else of them.

Each fixture is a small package: its ``.py`` modules mark the line of every finding they must produce with
``# expect: CODE``; the other files are templates it renders.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from agentcache.lint import Finding, lint_paths
from agentcache.lint.python import templates
from tests.lint.test_python_source import _expected

AGENT = """
    import random
    import time
    import uuid
    from pydantic import BaseModel, Field

    class Agent(BaseModel):
        name: str = Field(default_factory=lambda: random.choice(["Ada", "Bo"]))
        id: str = Field(default_factory=lambda: uuid.uuid4().hex)
        role: str = "researcher"

        def __init__(self, **data):
            super().__init__(**data)
            self.started = time.time()

        def memories(self):
            found = set()
            found.update(self.stores)
            return found
"""

POSITIVE = {
    "template_class_names_its_file": {
        "base.py": """
            class Template:
                template_path: str = ""

            class AgentTemplate(Template):
                template_path: str = "agent.jinja"
        """,
        "prompts/agent.jinja": """
            Your name is {{ agent.name }}, a {{ agent.role }}.
            {% for memory in memories %}- {{ memory.key }}: {{ memory.instructions }}
            {% endfor %}
        """,
        "agent.py": AGENT
        + """
        def messages(self):
            from pkg.base import AgentTemplate
            prompt = AgentTemplate(agent=self, memories=self.memories()).render()
            return [SystemMessage(content=prompt)]  # expect: AC101 AC103
        """,
    },
    "environment_loads_it_by_name": {
        "templates/system.j2": "Started {{ agent.started }}. {% if agent.role %}{{ agent.role }}{% endif %}",
        "agent.py": AGENT
        + """
        def build_system_prompt(self, env):
            return env.get_template("system.j2").render(agent=self)  # expect: AC101
        """,
    },
    "template_from_a_string": {
        "agent.py": AGENT
        + """
        def messages(self, env):
            template = env.from_string("You are {{ agent.name }}.")
            return [{"role": "system", "content": template.render(agent=self)}]  # expect: AC101
        """,
    },
}

NEGATIVE = {
    "fields_the_template_does_not_print": {
        "prompts/agent.jinja": """
            You are a {{ agent.role }}.
            {% if memories %}Consult your memory modules.{% endif %}
        """,
        "agent.py": AGENT
        + """
        def messages(self, env):
            prompt = env.get_template("agent.jinja").render(agent=self, memories=self.memories())
            return [SystemMessage(content=prompt)]
        """,
    },
    "template_not_found": {
        "agent.py": AGENT
        + """
        def messages(self, env):
            prompt = env.get_template("elsewhere.jinja").render(agent=self, memories=self.memories())
            return [SystemMessage(content=prompt)]
        """,
    },
    "template_that_includes_another": {
        "prompts/agent.jinja": "{% include 'header.jinja' %} You are {{ agent.name }}.",
        "agent.py": AGENT
        + """
        def messages(self, env):
            return [SystemMessage(content=env.get_template("agent.jinja").render(agent=self))]
        """,
    },
}


def _lint(tmp_path: Path, files: dict[str, str]) -> tuple[str, list[Finding]]:
    package = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    findings = [finding for finding in lint_paths([package]).findings if finding.path.endswith("agent.py")]
    return (package / "agent.py").read_text(encoding="utf-8"), findings


@pytest.fixture(params=["jinja", "pattern"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each template read by Jinja's parser, and by the pattern used when jinja2 is not installed."""
    templates.reads.cache_clear()
    if request.param == "pattern":
        monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 raises ImportError
    yield request.param
    templates.reads.cache_clear()


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_reports_what_a_template_prints_of_an_object(tmp_path: Path, name: str, parser: str) -> None:
    text, findings = _lint(tmp_path, POSITIVE[name])
    assert sorted((finding.code, finding.line) for finding in findings) == _expected(text)


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_stays_quiet_on_what_a_template_does_not_print(tmp_path: Path, name: str, parser: str) -> None:
    _, findings = _lint(tmp_path, NEGATIVE[name])
    assert findings == []


def test_a_finding_names_the_field_the_template_prints(tmp_path: Path) -> None:
    _, findings = _lint(tmp_path, POSITIVE["template_class_names_its_file"])
    by_code = {finding.code: finding.message for finding in findings}
    assert "random.choice" in by_code["AC101"]
    assert "uuid" not in by_code["AC101"]  # agent.id is not in the template
    assert "`memories`" in by_code["AC103"]
