"""Whether SGLang and vLLM hand a template message ``content`` as a string or as a list of parts.

Both read it off the template's syntax tree before rendering, each by its own rule, and reshape every message to
match: a template that loops over a message's ``content`` gets ``"openai"`` parts, any other a ``"string"``. The
rules below are ports of the engines' own (SGLang 0.5.23 ``srt/parser/jinja_template_utils.py``
``detect_jinja_template_content_format``; vLLM 0.32 ``renderers/hf.py`` ``_detect_content_format``), checked
against them on every real template by ``tests/servers/test_formats.py``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from functools import cache
from typing import Any, Literal

ContentFormat = Literal["string", "openai"]


def _parsed(source: str) -> Any | None:
    """The template's syntax tree, parsed as transformers compiles it; None when it does not parse."""
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):
        tags = {"generation"}  # noqa: RUF012 (jinja2 declares it a set)

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.Scope(body, lineno=lineno)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    try:
        return env.parse(source)
    except Exception:  # the engines fall back to "string" on a template they cannot parse
        return None


def _is_var(node: Any, name: str) -> bool:
    from jinja2 import nodes

    return isinstance(node, nodes.Name) and node.ctx == "load" and node.name == name


def _is_attr(node: Any, name: str, key: str) -> bool:
    from jinja2 import nodes

    if isinstance(node, nodes.Getitem):
        return _is_var(node.node, name) and isinstance(node.arg, nodes.Const) and node.arg.value == key
    return isinstance(node, nodes.Getattr) and _is_var(node.node, name) and node.attr == key


def _is_var_or_elems(node: Any, name: str, key: str | None = None) -> bool:
    """``name`` or ``name[key]``/``name.key``, through filters, tests and slices (both engines' helper)."""
    from jinja2 import nodes

    if isinstance(node, nodes.Filter):
        return node.node is not None and _is_var_or_elems(node.node, name, key)
    if isinstance(node, nodes.Test):
        return _is_var_or_elems(node.node, name, key)
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Slice):
        return _is_var_or_elems(node.node, name, key)
    return _is_attr(node, name, key) if key else _is_var(node, name)


@cache
def sglang_content_format(source: str) -> ContentFormat:
    """SGLang's rule: a media word anywhere, or a loop over ``message``/``msg``/``m`` ``.content``."""
    from jinja2 import nodes

    if any(word in source for word in ("image", "audio", "video", "vision")):
        return "openai"
    tree = _parsed(source)
    if tree is None:
        return "string"
    for loop in tree.find_all(nodes.For):
        if any(_is_var_or_elems(loop.iter, name, "content") for name in ("message", "msg", "m")):
            return "openai"
    return "string"


@cache
def vllm_content_format(source: str) -> ContentFormat:
    """vLLM's rule: a loop over the ``content`` of a variable bound to an element of ``messages`` (followed
    through assignments and macro arguments), or over a bare ``content`` outside macros."""
    tree = _parsed(source)
    if tree is None:
        return "string"
    try:
        next(_vllm_content_loops(tree))
    except StopIteration:
        return "string"
    except Exception:  # vLLM's walk asserts on shapes it does not expect, and then says "string"
        return "string"
    return "openai"


def _assigned_from(root: Any, name: str) -> Iterator[str]:
    from jinja2 import nodes

    yield name
    pending = deque([name])
    while pending:
        related = pending.popleft()
        for assign in root.find_all(nodes.Assign):
            if _is_var_or_elems(assign.node, related):
                if not isinstance(assign.target, nodes.Name):
                    raise ValueError("vLLM's walk expects a plain name")
                yield assign.target.name
                if assign.target.name != related:
                    pending.append(assign.target.name)


def _message_names(root: Any) -> Iterator[str]:
    from jinja2 import nodes

    names = list(_assigned_from(root, "messages"))
    for loop in root.find_all(nodes.For):
        if any(_is_var_or_elems(loop.iter, name) for name in names):
            if not isinstance(loop.target, nodes.Name):
                raise ValueError("vLLM's walk expects a plain name")
            yield loop.target.name


def _vllm_content_loops(root: Any) -> Iterator[Any]:
    from jinja2 import nodes

    message_names = list(_message_names(root))
    params_by_loop: dict[int, set[str]] = {}
    in_macros: set[int] = set()
    for macro in root.find_all(nodes.Macro):
        param_names = {arg.name for arg in macro.args}
        content_params: set[str] = set()
        for call in root.find_all(nodes.Call):
            if not (isinstance(call.node, nodes.Name) and call.node.name == macro.name):
                continue
            for i, arg in enumerate(call.args):
                if i < len(macro.args) and any(_is_var_or_elems(arg, n, "content") for n in message_names):
                    content_params.add(macro.args[i].name)
            for keyword in call.kwargs:
                if (
                    isinstance(keyword, nodes.Keyword)
                    and keyword.key in param_names
                    and any(_is_var_or_elems(keyword.value, n, "content") for n in message_names)
                ):
                    content_params.add(keyword.key)
        for loop in macro.find_all(nodes.For):
            in_macros.add(id(loop))
            if content_params:
                params_by_loop[id(loop)] = content_params
    for loop in root.find_all(nodes.For):
        params = params_by_loop.get(id(loop))
        bare = loop.iter.name if isinstance(loop.iter, nodes.Name) else None
        over_content = (
            any(_is_var_or_elems(loop.iter, n, "content") for n in message_names)
            or (bare is not None and params is not None and bare in params)
            or (bare == "content" and id(loop) not in in_macros)
        )
        if over_content:
            if not isinstance(loop.target, nodes.Name):
                raise ValueError("vLLM's walk expects a plain name")
            yield loop
