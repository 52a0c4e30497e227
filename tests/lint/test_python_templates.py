"""Templates rendered into a system prompt: what the template prints or iterates of the objects passed to it flows
into the rendered text, and nothing else of them: of a dict of variables given whole, the keys it prints. A template
read from the package's data files by its key path (a settings table, a config's field) is known by its text; one
whose text is nowhere in the package (the user's) prints none of a dict of variables it is offered.

Each fixture is a small package: its ``.py`` modules mark the line of every finding they must produce with
``# expect: CODE``; the other files are templates it renders and data files that hold them.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from agentcache.lint import Finding, lint_paths
from agentcache.lint.python import templates
from tests.lint.marked import expected, lint_source

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


RENDERED_FROM_A_FIELD = """
    from datetime import datetime
    from jinja2 import Environment

    class Node:
        def __init__(self, template):
            self.template = template

        def build_system_prompt(self):
            return Environment().from_string(self.template).render(current_date=datetime.now()){expect}
"""
FORMATTED_BY_KEYWORD = """
    from datetime import datetime
    from langchain_core.messages import SystemMessage

    class Node:
        def __init__(self, system_prompt):
            self.system_prompt = system_prompt

        def messages(self, task):
            text = self.system_prompt.format(current_date=datetime.now(), task=task)
            return [SystemMessage(content=text)]{expect}
"""


PROMPT_BY_NAME = """
    from datetime import datetime
    from openai import OpenAI

    async def answer(prompts, question):
        system = await prompts.get_cached_prompt("rag_agent", inputs={{"date": datetime.now().strftime("%m/%d/%Y")}})
        messages = [{{"role": "system", "content": system}}, {{"role": "user", "content": question}}]{expect}
        return OpenAI().chat.completions.create(model="m", messages=messages)
"""

#: A loader that adds the clock to every template it renders, the template named by its caller (holmesgpt's
#: ``load_and_render_prompt("builtin://generic_ask.jinja2", context)``).
#: What the loaders below import, and where their templates are.
LOADER_HEAD = """
    import json
    from datetime import date, datetime, timezone
    from pathlib import Path
    from jinja2 import Environment, FileSystemLoader

    HERE = Path(__file__).parent / "prompts"
"""
LOADER = (
    LOADER_HEAD
    + """
    def load_and_render_prompt(prompt, context=None):
        text = (HERE / prompt.removeprefix("builtin://")).read_text()
        template = Environment(loader=FileSystemLoader(HERE)).from_string(text)
        if context is None:
            context = {}
        now = datetime.now(timezone.utc)
        context.update({"now": f"{now}", "current_year": now.year, "generated; utc": f"{now}"})
        return template.render(**context)
"""
)
#: Loaders whose own clock reaches what they return by another way than the variables of the caller's template.
LOADER_BESIDE = (
    LOADER_HEAD
    + """
    def load_and_render_prompt(prompt, context):
        template = Environment().from_string((HERE / prompt.removeprefix("builtin://")).read_text())
        now = datetime.now(timezone.utc)
        return f"Generated at {now}.\\n" + template.render(now=now, **context)
"""
)
LOADER_FOOTER = (
    LOADER_HEAD
    + """
    def load_and_render_prompt(prompt, context):
        text = (HERE / prompt.removeprefix("builtin://")).read_text()
        text += "\\n" + (HERE / "_footer.jinja2").read_text()
        context.update({"now": f"{datetime.now(timezone.utc)}"})
        return Environment().from_string(text).render(**context)
"""
)
LOADER_HOLDS_MORE = (
    LOADER_HEAD
    + """
    def load_and_render_prompt(prompt, context):
        text = (HERE / prompt.removeprefix("builtin://")).read_text()
        template = Environment().from_string(text, {"now": datetime.now(timezone.utc)})
        extra = json.loads(json.dumps({"stamp": str(datetime.now(timezone.utc))}))
        return template.render(extra, today=date.today(), **context)
"""
)
LOADER_TWO = (
    LOADER_HEAD
    + """
    def load_and_render_prompt(checked, prompt, context):
        env, now = Environment(), datetime.now()
        env.from_string((HERE / checked).read_text()).render(now=now, **context)
        return env.from_string((HERE / prompt).read_text()).render(now=now, **context)
"""
)
LOADER_CALLER = """
    from pkg.loader import load_and_render_prompt

    def messages(toolsets, question):
        system = load_and_render_prompt("builtin://{name}", {{"toolsets": toolsets}})
        return [{{"role": "system", "content": system}}, {{"role": "user", "content": question}}]{expect}
"""


def _loaded(
    loader: str, templates: dict[str, str], name: str = "ask.jinja2", expect: str = "  # expect: AC101"
) -> dict[str, str]:
    """A package whose agent sends the template ``name`` rendered by ``loader``, with these files in ``prompts/``."""
    files = {f"prompts/{file}": text for file, text in templates.items()}
    return {**files, "loader.py": loader, "agent.py": LOADER_CALLER.format(name=name, expect=expect)}


POSITIVE = {
    "a_variable_of_a_prompt_made_by_name_a_template_prints": {
        "prompts/rag_agent.yaml": "rag_agent:\n  template: 'You answer from the documents. The date is {date}.'\n",
        "agent.py": PROMPT_BY_NAME.format(expect="  # expect: AC101"),
    },
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
    "a_loader_adds_the_clock_the_named_template_includes_one_that_prints_it": _loaded(
        LOADER,
        {
            "ask.jinja2": "You troubleshoot. {% include '_footer.jinja2' %}",
            "_footer.jinja2": "{% for t in toolsets %}{{ t.name }}{% endfor %} It is {{ now }}.",
        },
    ),
    "a_loader_returns_its_clock_beside_the_named_template": _loaded(LOADER_BESIDE, {"ask.jinja2": "You troubleshoot."}),
    "a_loader_adds_its_own_text_to_the_named_template": _loaded(
        LOADER_FOOTER, {"ask.jinja2": "You troubleshoot.", "_footer.jinja2": "It is {{ now }}."}
    ),
    "a_loader_renders_two_named_templates_and_returns_the_second": {
        "prompts/user.jinja2": "Question: {{ question }}",
        "prompts/ask.jinja2": "You answer. Today is {{ now }}.",
        "loader.py": LOADER_TWO,
        "agent.py": LOADER_CALLER.replace("load_and_render_prompt(", 'load_and_render_prompt("user.jinja2", ', 1)
        .replace("builtin://", "")
        .format(name="ask.jinja2", expect="  # expect: AC101"),
    },
    "a_loader_gives_the_template_more_than_the_variables_it_offers": _loaded(
        LOADER_HOLDS_MORE, {"ask.jinja2": "It is {{ now }}, {{ stamp }}."}
    ),
    "includes_the_named_template_brings_in_other_forms": _loaded(
        LOADER,
        {
            "ask.jinja2": "{%+ include '_plain.jinja2' %} {% include '_long.jinja2' if v else '_short.jinja2' %}",
            "_plain.jinja2": "Be brief.",
            "_long.jinja2": "Be thorough.",
            "_short.jinja2": "Be brief. It is {{ now }}.",
        },
    ),
    "a_loader_adds_the_clock_to_a_template_not_found": _loaded(
        LOADER, {"ask.jinja2": "You troubleshoot."}, name="elsewhere.jinja2"
    ),
}

#: A settings table shipped with the package, read as ``get_settings().review_prompt.system`` (dynaconf): the system
#: template prints the diff, the user template the date.
PROMPTS_TOML = '''
    [review_prompt]
    system = """You review pull requests. Report the risks in this diff: {{ diff }}"""
    user = """Today's date: {{ date }}. Review it now."""
'''

#: pr-agent's shape: one dict of variables, the date among them, rendered into both templates.
REVIEW = """
    from datetime import datetime
    from jinja2.sandbox import SandboxedEnvironment
    from pkg.config import get_settings

    def review(client, diff):
        variables = {{"date": datetime.now().strftime("%Y-%m-%d"), "diff": diff}}
        environment = SandboxedEnvironment()
        system = environment.from_string(get_settings().review_prompt.{system}).render(variables)
        user = environment.from_string(get_settings().review_prompt.user).render(variables)
        return client.chat(system=system, user=user)  # expect: {expect}
"""

#: mini-swe-agent's shape: an agent renders its config's templates (shipped in YAML files, one per config) with the
#: seconds since it started among the variables.
CONFIG_AGENT = """
    import time
    from jinja2 import StrictUndefined, Template

    class Agent:
        def __init__(self, config):
            self.config = config
            self.started = time.time()

        def template_vars(self):
            return merge(self.config.model_dump(), {{"elapsed_seconds": int(time.time() - self.started)}})

        def render(self, template):
            return Template(template, undefined=StrictUndefined).render(**self.template_vars())

        def messages(self, task):
            return [
                {{"role": "system", "content": self.render(self.config.system_template)}},  # expect: {expect}
                {{"role": "user", "content": self.render(self.config.instance_template)}},
            ]
"""

#: A class of another module renders the templates with the variables its callers give (pr-agent's token budget).
BUDGET = """
    from jinja2 import Environment
    from pkg.config import get_settings

    class Budget:
        def __init__(self, handler):
            self.handler = handler

        @classmethod
        def for_model(cls, model, handler):
            return cls(handler.bound(model))

        def render(self, variables):
            return Environment().from_string({template}).render(variables)
"""
BUDGET_CALLER = """
    from datetime import date
    from pkg.budget import Budget

    def review(client, handler, diff):
        budget = Budget.for_model("m", handler)
        return client.chat(system=budget.render({{"date": date.today(), "diff": diff}}))  # expect: {expect}
"""

#: A dict of variables whose items are read one by one (``d.get("date")``, ``d["diff"]``): only the item read
#: reaches the text, or the default ``get`` gives for a key the dict does not hold.
DICT_READS = """
    from datetime import date

    SYSTEM = "You review diffs. {{diff}}"

    def review(client, diff):
        variables = {{"date": date.today().isoformat(), "diff": diff}}
        return client.create(system=SYSTEM.format(diff={read}))  # expect: {expect}

    def review_since(client, diff):
        variables = {{"date": date.today().isoformat(), "diff": diff}}
        return client.create(system=SYSTEM.format(diff={other}))  # expect: {expect}
"""

POSITIVE.update(
    {
        "settings_template_that_prints_the_date": {
            "settings/prompts.toml": PROMPTS_TOML,
            "agent.py": REVIEW.format(system="user", expect="AC101"),
        },
        "config_field_template_that_prints_a_variable": {
            "config/default.yaml": """
                agent:
                  system_template: "You help. {{ elapsed_seconds }} seconds have passed."
                  instance_template: "Solve: {{ task }}"
            """,
            "config/fast.yaml": "agent:\n  system_template: You help, briefly.\n",
            "agent.py": CONFIG_AGENT.format(expect="AC101"),
        },
        "config_field_template_that_iterates_a_set": {
            "config/agent.yml": """
                agent:
                  system_template: |
                    You may use: {% for skill in skills %}{{ skill }}, {% endfor %}
            """,
            "agent.py": """
                from jinja2 import Template

                class Agent:
                    def messages(self, skills):
                        names = {skill.name for skill in skills}
                        system = Template(self.config.system_template).render(skills=names)
                        return [{"role": "system", "content": system}]  # expect: AC103
            """,
        },
        "json_prompt_read_by_keys": {
            "prompts.json": '{"planner": {"system": "Plan the trip. Today is {date}."}}',
            "agent.py": """
                import json
                from datetime import date
                from pathlib import Path

                PROMPTS = json.loads(Path(__file__).with_name("prompts.json").read_text())

                def plan(client, question):
                    variables = {"date": date.today(), "question": question}
                    return client.create(system=PROMPTS["planner"]["system"].format(**variables))  # expect: AC101
            """,
        },
        "a_class_of_another_module_renders_what_prints_the_date": {
            "settings/prompts.toml": PROMPTS_TOML,
            "budget.py": BUDGET.format(template="get_settings().review_prompt.user"),
            "agent.py": BUDGET_CALLER.format(expect="AC101"),
        },
        "items_read_from_a_dict_of_variables": {
            "agent.py": DICT_READS.format(
                read="variables.get('date')", other="variables.get('since', date.today())", expect="AC101"
            ),
        },
        "a_keyword_given_to_a_template_not_found": {  # the caller's template, chosen for this keyword
            "agent.py": """
                from datetime import datetime
                from jinja2 import Environment

                def build_system_prompt(raw_template):
                    return Environment().from_string(raw_template).render(current_date=datetime.now())  # expect: AC101
            """,
        },
        "a_keyword_a_template_of_the_package_names": {
            "prompts/research.md": "You research. Today is {{ current_date }}.",
            "agent.py": RENDERED_FROM_A_FIELD.format(expect="  # expect: AC101"),
        },
        "a_keyword_a_format_field_of_the_package_names": {
            "agent.py": FORMATTED_BY_KEYWORD.format(expect="  # expect: AC101"),
            "prompts.py": 'RESEARCH = """You research.\nToday is {current_date:%Y-%m-%d}."""\n',
        },
        "a_keyword_a_data_file_of_the_package_names": {
            "agent.py": FORMATTED_BY_KEYWORD.replace(".format(", ".substitute(").format(expect="  # expect: AC101"),
            "config.yaml": "agent:\n  system: 'You research. Today is ${current_date}.'\n",
        },
    }
)

NEGATIVE = {
    "a_loader_adds_the_clock_the_named_template_and_its_includes_do_not_print": _loaded(
        LOADER,
        {
            "ask.jinja2": "You troubleshoot.{% if toolsets %} {% include '_tools.jinja2' %}{% endif %}",
            "_tools.jinja2": "{% for t in toolsets %}- {{ t.name }}: {{ t.instructions }}\n{% endfor %}",
            "user.jinja2": "It is {{ now }}. {{ question }}",
        },
        expect="",
    ),
    "templates_that_import_each_other": {
        **{
            f"prompts/m{i}.jinja2": "".join(f"{{% import 'm{j}.jinja2' as m{j} %}}" for j in range(12) if j != i)
            for i in range(12)
        },
        "prompts/ask.jinja2": "{% from 'm0.jinja2' import card %}You troubleshoot.",
        "loader.py": LOADER,
        "agent.py": LOADER_CALLER.format(name="ask.jinja2", expect=""),
    },
    "a_variable_of_a_prompt_made_by_name_no_template_prints": {
        "prompts/rag_agent.yaml": "rag_agent:\n  template: 'You answer from the documents: {context}.'\n",
        "agent.py": PROMPT_BY_NAME.format(expect=""),
    },
    "a_keyword_no_text_of_the_package_prints": {  # the date is offered to templates the user sets on the object
        "prompts/research.md": "You research. Today is {{ date }}. Cite {current_datetime} and $current.",
        "agent.py": RENDERED_FROM_A_FIELD.format(expect=""),
    },
    "a_format_keyword_no_text_of_the_package_prints": {
        "agent.py": FORMATTED_BY_KEYWORD.format(expect=""),
    },
    "items_of_a_dict_of_variables_that_do_not_differ": {
        "agent.py": DICT_READS.format(
            read="variables.get('diff', '')", other="variables['diff'] or variables.get('title')", expect=""
        ),
    },
    "settings_template_that_does_not_print_the_date": {
        "settings/prompts.toml": PROMPTS_TOML,
        "agent.py": REVIEW.format(system="system", expect=""),
    },
    "config_field_templates_that_print_nothing": {
        "config/default.yaml": """
            agent:
              system_template: |
                You are a helpful assistant that can interact with a computer.
              instance_template: "Solve: {{ task }} ({{ elapsed_seconds }} s)"
        """,
        "config/fast.yaml": "agent:\n  system_template: You help, briefly.\n",
        "agent.py": CONFIG_AGENT.format(expect=""),
    },
    "a_template_the_package_does_not_ship": {
        "agent.py": """
            from datetime import datetime, timezone
            from jinja2.sandbox import SandboxedEnvironment

            ENV = SandboxedEnvironment()

            class RunContext:
                def render_workflow_template(self, raw_template):
                    data = self.values.copy()
                    data.setdefault("current_date", datetime.now(timezone.utc).strftime("%Y-%m-%d"))
                    return ENV.from_string(raw_template).render(data)

                def send(self, client):
                    return client.create(system=self.render_workflow_template(self.workflow.system_prompt))
        """,
    },
    "a_key_several_settings_share": {
        "settings/prompts.toml": """
            [review_prompt]
            system = "Review. Today is {{ date }}."
            [changelog_prompt]
            system = "Write the changelog of {{ date }}."
        """,
        "agent.py": """
            from datetime import date
            from jinja2 import Environment

            class Handler:
                def send(self, client, diff):
                    variables = {"date": date.today(), "diff": diff}
                    return client.create(system=Environment().from_string(self.handler.system).render(variables))
        """,
    },
    "a_class_of_another_module_renders_what_does_not_print_it": {
        "settings/prompts.toml": PROMPTS_TOML,
        "budget.py": BUDGET.format(template="get_settings().review_prompt.system"),
        "agent.py": BUDGET_CALLER.format(expect=""),
    },
    "a_class_of_another_module_renders_a_template_it_is_given": {
        "budget.py": BUDGET.format(template="self.handler.system"),
        "agent.py": BUDGET_CALLER.format(expect=""),
    },
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
    assert sorted((finding.code, finding.line) for finding in findings) == expected(text)


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


def test_a_script_keeps_what_a_field_template_is_given(tmp_path: Path) -> None:
    """A module in no package: the texts of its templates are not known, so every keyword counts."""
    text = FORMATTED_BY_KEYWORD.format(expect="  # expect: AC101")
    _, findings = lint_source(tmp_path, text)
    assert sorted((finding.code, finding.line) for finding in findings) == expected(textwrap.dedent(text).lstrip())
