"""Where prompts and tools are sent: message classes given their role by position or by name, sinks written inside
``yield``, the instruction keywords and setters of agent frameworks, a structured-output schema, and the values that
do not reach a sink (a location read from, another role's message).

Fixtures as in test_python_source: ``# expect: CODE`` marks each finding's line; a fixture without marks must
produce nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lint.test_python_source import _expected, _lint

POSITIVE = {
    "a_sink_first_reached_deep_in_a_chain_of_calls": """
        import time

        def handle(request):
            return route(request)

        def route(request):
            return respond(request)

        def respond(request):
            return [opening(), request]

        def opening():
            return {"role": "system", "content": f"Session opened at {started()}"}  # expect: AC101

        def started():
            return time.time()
    """,
    "a_cache_entry_holding_the_time_in_its_data": """
        import time

        _PROMPTS = {}

        def prompt_for(user):
            if user in _PROMPTS:
                text, hits = _PROMPTS[user]
                return text
            _PROMPTS[user] = (f"You serve {user}, signed in at {time.ctime()}.", 0)
            return prompt_for(user)

        def request(client, user):
            return client.create(system=prompt_for(user))  # expect: AC101
    """,
}

NEGATIVE = {
    "a_cache_entry_stored_with_its_time": """
        import time

        _SCHEMAS = {}

        def schemas(url):
            now = time.time()
            if url in _SCHEMAS:
                data, stored = _SCHEMAS[url]
                if now - stored < 300:
                    return data
            data = fetch(url)
            _SCHEMAS[url] = (data, now)
            return data

        def request(client, url):
            client.create(tools=[{"name": name, "parameters": schema} for name, schema in schemas(url).items()])
    """,
    "a_static_method_called_through_self": """
        class Agent:
            def list_tools(self, extra):
                merged_tools = [self.search_tool]
                names = {tool.name for tool in merged_tools}
                self._add_unique(merged_tools, names, extra)
                return merged_tools

            @staticmethod
            def _add_unique(merged_tools, names, tools):
                for tool in tools:
                    if tool.name not in names:
                        merged_tools.append(tool)
                        names.add(tool.name)
    """,
}


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_finds_what_each_fixture_marks(tmp_path: Path, name: str) -> None:
    text, findings = _lint(tmp_path, POSITIVE[name])
    assert sorted((finding.code, finding.line) for finding in findings) == _expected(text)


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_stays_quiet_where_nothing_reaches_a_sink(tmp_path: Path, name: str) -> None:
    _, findings = _lint(tmp_path, NEGATIVE[name])
    assert findings == []
