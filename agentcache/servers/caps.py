"""What a chat template can take, found the way llama.cpp finds it: by rendering probe conversations and watching
which values the template reads.

llama-server does not hand the request to the template as sent. It first asks the template what it supports
(``common/jinja/caps.cpp``): whether it reads ``content`` as a string or as a list of parts, whether it reads the
system message at all, whether it reads tool-call ``arguments`` as an object. The answers decide how the
messages are reshaped before the real rendering (parts joined, the system message merged into the next one,
arguments parsed). The same probes, with the same notion of a value being "used" (read as a member, passed to a
filter or a test, iterated), give the client the same answers.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agentcache.servers.template import ChatTemplate

_inside = threading.local()
"""``_inside.filter`` is set while a filter or test runs: what it does to its input (``tojson`` iterating a
list) is the filter's, not the template's, and llama.cpp counts only the filter itself."""


class _Stats:
    """Whether a probe value was used, and how (llama.cpp's ``value_t::stats_t``)."""

    _used: bool
    _ops: set[str]

    def _mark(self, op: str | None = None) -> None:
        if getattr(_inside, "filter", False):
            return
        self._used = True
        if op is not None:
            self._ops.add(op)


class _Str(str, _Stats):
    def __iter__(self) -> Iterator[str]:  # llama.cpp cannot loop over a string: the probe fails
        self._mark("array_access")
        raise TypeError("a string is not iterable in llama.cpp's Jinja")


class _List(list[Any], _Stats):
    def __iter__(self) -> Iterator[Any]:
        self._mark("array_access")
        return super().__iter__()


class _Dict(dict[str, Any], _Stats):
    def __iter__(self) -> Iterator[str]:
        self._mark("object_access")
        return super().__iter__()


def _tracked(value: Any) -> Any:
    made: Any
    if isinstance(value, str):
        made = _Str(value)
    elif isinstance(value, list):
        made = _List(_tracked(v) for v in value)
    elif isinstance(value, dict):
        made = _Dict({k: _tracked(v) for k, v in value.items()})
    else:
        return value
    made._used, made._ops = False, set()
    return made


def _mark(value: Any, op: str | None = None, deep: bool = False) -> None:
    if isinstance(value, _Stats):
        value._mark(op)
    if deep and isinstance(value, (list, dict)):
        for item in dict.values(value) if isinstance(value, dict) else list.__iter__(value):  # not a loop of its own
            _mark(item, deep=True)


def _used(value: Any) -> bool:
    return isinstance(value, _Stats) and value._used


def _ops(value: Any) -> set[str]:
    return value._ops if isinstance(value, _Stats) else set()


def _watch(env: Any) -> None:
    """Make every member read, filter and test of ``env`` mark what it touched, as llama.cpp's runtime does."""
    from jinja2 import Undefined

    getattr_, getitem = env.getattr, env.getitem

    def read(obj: Any, key: Any, value: Any) -> Any:
        if isinstance(value, Undefined):
            return value
        if callable(value) and isinstance(key, str):  # a method: llama.cpp's builtin function on obj
            _mark(obj, key)
            return value
        _mark(value)
        _mark(obj, "array_access" if isinstance(key, (int, bool)) else "object_access")
        return value

    env.getattr = lambda obj, attribute: read(obj, attribute, getattr_(obj, attribute))
    env.getitem = lambda obj, argument: read(obj, argument, getitem(obj, argument))
    for name, function in list(env.filters.items()):
        env.filters[name] = _watched(function, name, deep=name in ("tojson", "string"))
    for name, function in list(env.tests.items()):
        env.tests[name] = _watched(function, f"test_is_{name}", deep=False)


def _watched(function: Callable[..., Any], op: str, deep: bool) -> Callable[..., Any]:
    passes = getattr(function, "jinja_pass_arg", None) is not None  # context/environment first, then the value

    @functools.wraps(function)
    def watch(*args: Any, **kwargs: Any) -> Any:
        if len(args) > int(passes):
            _mark(args[int(passes)], op, deep)
        _inside.filter = True
        try:
            return function(*args, **kwargs)
        finally:
            _inside.filter = False

    return watch


@dataclass(frozen=True)
class TemplateCaps:
    """llama.cpp's ``jinja::caps`` of one template: what it reads, hence how requests are reshaped for it."""

    string_content: bool = True
    typed_content: bool = False
    system_role: bool = True
    tools: bool = True
    tool_calls: bool = True
    object_arguments: bool = False
    thinking: bool = False
    """Whether switching ``enable_thinking`` on adds or removes reasoning tags at the end of the prompt: llama-server
    then passes ``enable_thinking=true``, else false (a switch that only rewrites a line elsewhere is not taken
    for thinking)."""


_TOOL = {
    "name": "tool",
    "type": "function",
    "function": {
        "name": "tool1",
        "description": "Tool description",
        "parameters": {
            "type": "object",
            "properties": {"arg": {"type": "string", "description": "Arg description"}},
            "required": ["arg"],
        },
    },
}


def _tool_conversation(arguments: Any) -> list[dict[str, Any]]:
    call = {"id": "call00001", "type": "function", "function": {"name": "tool1", "arguments": arguments}}
    return [
        {"role": "user", "content": "User message"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "Tool response", "tool_call_id": "call00001"},
        {"role": "assistant", "content": "The tool response was 'tool response'"},
        {"role": "user", "content": "User message"},
    ]


_USER = "test"


@functools.lru_cache(maxsize=128)
def llama_cpp_caps(template: ChatTemplate) -> TemplateCaps:
    """The probes of llama.cpp's ``caps_get``, in its order, on this template."""
    watch = template.compiled(_watch)

    def probe(
        messages: list[dict[str, Any]], tools: list[Any] | None = None, **extra: Any
    ) -> tuple[bool, Any, Any, str]:
        """``(rendered without error, the watched messages, the watched tools, the text)``."""
        tracked_messages, tracked_tools = _tracked(messages), _tracked(tools or [])
        variables = {"messages": tracked_messages, "tools": tracked_tools, "bos_token": "", "eos_token": "",
                     "add_generation_prompt": True, **extra}
        try:
            return True, tracked_messages, tracked_tools, watch.render(**variables)
        except Exception:  # a probe the template refuses is an answer too
            return False, tracked_messages, tracked_tools, ""

    marker = "STRING_MARKER"
    string_content, typed_content = True, False
    ok, messages, _, text = probe([{"role": "user", "content": marker}])
    content = messages[0]["content"]
    as_array = bool(_ops(content) & {"selectattr", "array_access"})
    typed_content = as_array
    if not ok or (as_array and marker not in text):
        string_content = False
    if "test_is_string" in _ops(content):
        ok, messages, _, _ = probe([{"role": "user", "content": []}])
        if ok and _ops(messages[0]["content"]) & {"selectattr", "array_access"}:
            typed_content = True

    system = [{"role": "system", "content": "System message"}, {"role": "user", "content": "User message"}]
    _, messages, _, _ = probe(system)
    system_role = _used(messages[0]["content"])

    tools = tool_calls = True
    object_arguments = False
    ok, messages, tracked, _ = probe(_tool_conversation({"arg": "value"}), [_TOOL])
    if ok:
        tools = _used(tracked[0]["function"]["name"])
        tool_calls = _used(messages[1]["tool_calls"])
        object_arguments = tool_calls and _used(messages[1]["tool_calls"][0]["function"]["arguments"]["arg"])
    if not object_arguments:
        ok, messages, tracked, _ = probe(_tool_conversation('{"arg": "value"}'), [_TOOL])
        if ok:
            tools = _used(tracked[0]["function"]["name"])
            tool_calls = _used(messages[1]["tool_calls"])
        else:
            tools = tool_calls = False

    user = [{"role": "user", "content": _USER}]
    thinking = _thinks(probe(user, enable_thinking=False)[3], probe(user, enable_thinking=True)[3])
    return TemplateCaps(string_content, typed_content, system_role, tools, tool_calls, object_arguments, thinking)


def _thinks(off: str, on: str) -> bool:
    """Whether the switch changes what follows the user's message: the generation prompt opens a reasoning block,
    or closes an empty one. llama.cpp's differential analysis finds reasoning tags there; a switch that only
    rewrites a line of the system prompt (Apertus's "Deliberation: enabled") is not taken for thinking."""
    return off.rpartition(_USER)[2] != on.rpartition(_USER)[2]
