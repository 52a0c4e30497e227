"""Tool-schema file rules (AC2xx): what each finds and where, what --fix writes, which files are recognized."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcache import canonicalize
from agentcache.errors import InputError
from agentcache.lint import Finding, lint_paths

OPENAI_TOOLS = """[
  {
    "type": "function",
    "function": {
      "name": "search",
      "description": "Search the web.\\r\\nReturns pages.",
      "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query", "limit"]}
    }
  },
  {"function": {"name": "fetch", "parameters": {"type": "object"}}, "type": "function"}
]
"""


def _position(text: str, needle: str, occurrence: int = 0) -> tuple[int, int]:
    """1-based (line, column) of a needle, computed independently of the linter."""
    offset = -1
    for _ in range(occurrence + 1):
        offset = text.index(needle, offset + 1)
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _lint(tmp_path: Path, text: str, name: str = "tools.json", fix: bool = False) -> list[Finding]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    result = lint_paths([path], fix=fix)
    return [*result.fixed, *result.findings] if fix else list(result.findings)


def test_each_rule_points_at_its_place(tmp_path: Path) -> None:
    findings = {finding.code: finding for finding in _lint(tmp_path, OPENAI_TOOLS)}
    assert sorted(findings) == ["AC201", "AC202", "AC203", "AC204"]
    located = {code: (finding.line, finding.column) for code, finding in findings.items()}
    assert located["AC201"] == _position(OPENAI_TOOLS, '"search"')
    assert located["AC202"] == _position(OPENAI_TOOLS, '"type"')  # the first key out of place: "function" sorts first
    assert located["AC203"] == _position(OPENAI_TOOLS, '["query", "limit"]')
    assert located["AC204"] == _position(OPENAI_TOOLS, '"Search the web.')
    required = findings["AC203"]
    assert (required.end_line, required.end_column) == (required.line, required.column + len('["query", "limit"]'))
    assert "$[0].function.parameters.required" in required.message
    assert "$[0].function.description" in findings["AC204"].message


def test_positions_survive_escapes_and_wide_characters(tmp_path: Path) -> None:
    text = '{"tools": [{"name": "b", "description": "\\u00e9\\"😀\\\\", "input_schema": {"type": ["string", "null"]}}, {"input_schema": {}, "name": "a"}]}\n'  # noqa: E501
    findings = {finding.code: finding for finding in _lint(tmp_path, text)}
    assert (findings["AC203"].line, findings["AC203"].column) == _position(text, '["string", "null"]')
    assert (findings["AC201"].line, findings["AC201"].column) == _position(text, '"b"')


def test_a_canonical_file_is_clean_and_left_alone(tmp_path: Path) -> None:
    canonical = json.dumps(canonicalize({"tools": json.loads(OPENAI_TOOLS)})["tools"], indent=2) + "\n"
    path = tmp_path / "tools.json"
    path.write_text(canonical)
    result = lint_paths([path], fix=True)
    assert (result.findings, result.fixed, result.rewritten) == ((), (), ())
    assert path.read_text() == canonical


@pytest.mark.parametrize(
    ("indent", "newline"),
    [(2, "\n"), (4, "\r\n"), ("\t", "\n"), (None, "\n")],
)
def test_fix_writes_the_canonical_form_in_the_files_style(
    tmp_path: Path, indent: int | str | None, newline: str
) -> None:
    tools = json.loads(OPENAI_TOOLS)
    text = json.dumps(tools, indent=indent).replace("\n", newline) + newline
    fixed = _lint(tmp_path, text, fix=True)
    assert {finding.code for finding in fixed} == {"AC201", "AC202", "AC203", "AC204"}
    written = (tmp_path / "tools.json").read_bytes().decode()
    assert json.loads(written) == canonicalize({"tools": tools})["tools"]
    assert written.endswith(newline) and ("\r\n" in written) == (newline == "\r\n")
    if indent is None:
        assert "\n" not in written.rstrip("\n")
    else:
        unit = indent if isinstance(indent, str) else " " * indent
        assert written.replace("\r\n", "\n").splitlines()[1] == unit + "{"
    assert _lint(tmp_path, written) == []


@pytest.mark.parametrize(
    ("number", "written"),
    [("0.1000000000000000001", "0.1"), ("1E2", "100.0"), ("1.50", "1.5"), ("-0", "0"), ("1e5", "100000.0")],
)
@pytest.mark.parametrize("indent", [None, 2])
def test_fix_never_changes_a_numbers_value_or_text(
    tmp_path: Path, number: str, written: str, indent: int | None
) -> None:
    """A file whose rewrite would write a number otherwise is left as it is, with a finding naming the number and
    what it would become; a number written back as it is (``-0.0``, ``100``) does not stop the fix."""
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "maximum": "N"}}}
    text = json.dumps(tool, indent=indent).replace('"N"', number) + "\n"
    findings = _lint(tmp_path, text, fix=True)
    assert (tmp_path / "tools.json").read_text() == text
    [refused] = [finding for finding in findings if finding.code == "AC206"]
    assert f"would write the number {number} as {written}" in refused.message
    assert "$.function.parameters.maximum" in refused.message
    kept = text.replace(number, "-0.0")
    assert {f.code for f in _lint(tmp_path, kept, fix=True)} == {"AC202"}
    assert "-0.0" in (tmp_path / "tools.json").read_text()


def test_a_byte_order_mark_is_kept_and_not_counted_as_a_column(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_bytes(b'\xef\xbb\xbf[{"name": "b", "parameters": {}}, {"name": "a", "parameters": {}}]')
    [finding] = lint_paths([path], fix=True).fixed
    assert (finding.code, finding.line, finding.column) == ("AC201", 1, len('[{"name": ') + 1)
    assert path.read_bytes() == b'\xef\xbb\xbf[{"name":"a","parameters":{}},{"name":"b","parameters":{}}]\n'


def test_request_bodies_and_legacy_functions_are_checked_as_a_whole(tmp_path: Path) -> None:
    body = {
        "model": "gpt-4o",
        "messages": [{"role": "user", "content": "hi"}],
        "functions": [
            {"name": "zeta", "parameters": {"type": "object"}},
            {"name": "alpha", "parameters": {"type": "object"}},
        ],
    }
    text = json.dumps(body, indent=2, sort_keys=False)
    codes = {finding.code: finding for finding in _lint(tmp_path, text)}
    assert codes["AC201"].line == _position(text, '"zeta"')[0]
    assert codes["AC202"].message.startswith("keys of $ are not in canonical order")
    _lint(tmp_path, text, fix=True)
    assert json.loads((tmp_path / "tools.json").read_text()) == canonicalize(body)


def test_anthropic_tools_keep_their_cache_control_breakpoint_and_one_tool_is_a_file(tmp_path: Path) -> None:
    tools = [
        {"name": "b", "input_schema": {"type": "object"}},
        {"name": "a", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}},
        {"name": "d", "input_schema": {"type": "object"}},
        {"name": "c", "input_schema": {"type": "object"}},
    ]
    text = json.dumps(tools, indent=2, sort_keys=True)
    [finding] = _lint(tmp_path, text)
    # "b" alone precedes the breakpoint on "a", so only "d", "c" after it are out of order.
    assert finding.code == "AC201" and (finding.line, finding.column) == _position(text, '"d"')
    single = json.dumps({"name": "one", "input_schema": {"type": "object", "required": ["b", "a"]}}, sort_keys=True)
    assert [finding.code for finding in _lint(tmp_path, single, "one.json")] == ["AC203"]


def test_duplicate_tool_names_are_reported_where_the_second_one_is(tmp_path: Path) -> None:
    text = '[\n  {"name": "a", "parameters": {}},\n  {"name": "a", "parameters": {}}\n]\n'
    [finding] = _lint(tmp_path, text, fix=True)
    assert (finding.code, finding.line, finding.column) == ("AC205", 3, 3)
    assert "$[1]" in finding.message and "already used" in finding.message
    assert (tmp_path / "tools.json").read_text() == text  # nothing is rewritten


def test_lone_surrogate_escape_is_not_canonicalizable(tmp_path: Path) -> None:
    text = '[{"name": "a", "description": "\\ud800", "parameters": {}}]'
    [finding] = _lint(tmp_path, text)
    assert finding.code == "AC205" and "$[0].description" in finding.message
    assert finding.column == _position(text, '"\\ud800"')[1]


@pytest.mark.parametrize(
    ("data", "problem", "line"),
    [
        (b'[\n  {"name": "a", "parameters": {}},\n]\n', "expected a JSON value", 3),
        (b'[{"name": "a", "name": "b", "parameters": {}}]', "appears twice", 1),
        (b'[{"name": "caf\xe9", "parameters": {}}]', "not UTF-8", 1),
    ],
)
def test_a_named_file_that_does_not_parse_is_an_ac001_finding(
    tmp_path: Path, data: bytes, problem: str, line: int
) -> None:
    path = tmp_path / "tools.json"
    path.write_bytes(data)
    [finding] = lint_paths([path]).findings
    assert (finding.code, finding.line) == ("AC001", line)
    assert problem in finding.message


def test_walked_json_that_is_not_about_tools_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "web", "description": "not a tool"}')
    (tmp_path / "tsconfig.json").write_text('{\n  // comments make this JSONC\n  "strict": true\n}')
    (tmp_path / "broken_tools.json").write_text('{"tools": [')
    result = lint_paths([tmp_path])
    assert [(Path(f.path).name, f.code) for f in result.findings] == [("broken_tools.json", "AC001")]
    assert result.files == 1


def test_a_walked_tool_file_is_parsed_and_a_named_one_checked_for_its_form(tmp_path: Path) -> None:
    """A tool file's bytes are the same on every call: a walk of a project, which looks for what differs between
    calls, reports none of its form (a package's data, nonebot-plugin-marshoai's tools.json) and fixes none, only
    that it does not parse or cannot be canonicalized (two tools of one name, which the APIs refuse); named, as the
    pre-commit hook names each file, it is checked against the canonical form."""
    (tmp_path / "tools.json").write_text('[{"name": "b", "parameters": {}}, {"name": "a", "parameters": {}}]\n')
    (tmp_path / "twice.json").write_text('[{"name": "a", "parameters": {}}, {"name": "a", "parameters": {}}]\n')
    walked = lint_paths([tmp_path], fix=True)
    assert ([finding.code for finding in walked.findings], walked.files) == (["AC205"], 2)
    assert [finding.code for finding in lint_paths([tmp_path / "tools.json"]).findings] == ["AC201"]


def test_a_named_json_file_without_tools_is_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "package.json"
    path.write_text('{"name": "web", "description": "not a tool"}')
    with pytest.raises(InputError, match="holds no tool definitions"):
        lint_paths([path])


_NAMES = st.lists(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), min_size=1, max_size=5, unique=True)


@st.composite
def _tool_files(draw: st.DrawFn) -> tuple[list[Any], int | None]:
    tools = []
    for name in draw(st.permutations(draw(_NAMES))):
        properties = draw(st.lists(st.sampled_from(["q", "limit", "page", "lang"]), unique=True, max_size=4))
        parameters = {
            "type": "object",
            "properties": {
                prop: {"type": draw(st.sampled_from(["string", ["integer", "null"]]))} for prop in properties
            },
            "required": draw(st.permutations(properties)),
        }
        function = {
            "name": name,
            "description": draw(st.sampled_from(["x", "a\r\nb", "e\u0301"])),
            "parameters": parameters,
        }
        keys = draw(st.permutations(list(function)))
        tools.append({"type": "function", "function": {key: function[key] for key in keys}})
    return tools, draw(st.sampled_from([None, 2, 4]))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=_tool_files())
def test_fix_is_canonicalize_and_leaves_nothing_to_report(tmp_path: Path, drawn: tuple[list[Any], int | None]) -> None:
    tools, indent = drawn
    path = tmp_path / "drawn.json"
    path.write_text(json.dumps(tools, indent=indent))
    first = lint_paths([path], fix=True)
    assert first.findings == ()
    assert json.loads(path.read_text()) == canonicalize({"tools": tools})["tools"]
    assert lint_paths([path]).findings == ()
