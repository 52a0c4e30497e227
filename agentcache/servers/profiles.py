"""What each server does to a chat request before its chat template sees it, and how it caches.

Predicting a server's prompt tokens exactly needs more than its template: every server first reshapes the request
through its own request models, and the template renders what comes out. Measured on SGLang 0.5.23, vLLM 0.32.0
and llama.cpp (llama-cpp-python 0.3.36's copy), with the test model's template (docs/engines.md):

=============================  ========================  ===========================  ==========================
                               SGLang                    vLLM                         llama.cpp
=============================  ========================  ===========================  ==========================
``function`` keys              known keys as sent;       ``name``, ``description``,   ``name``, ``description``,
                               missing ``description``,  ``parameters``, ``strict``   ``parameters``; ``strict``
                               ``parameters`` as null;   (missing description null)   dropped (missing desc. "",
                               unknown keys dropped                                   missing parameters {})
tool                           adds ``defer_loading``
                               (null) after function
``tool_choice``                "none": no tools; a
                               named one: only it
assistant ``arguments``        a JSON object is parsed   a JSON object is parsed;     any JSON is parsed when
string                         (anything else: 400)      anything else becomes {}     the template reads objects
                                                                                      (not JSON: 500), else kept
text parts of ``content``      joined with " " for a     joined with "\\n" for a      joined with "\\n" when the
                               ``string`` template, kept ``string`` template, kept   template reads only strings
                               for ``openai`` (``tool``: (a string wrapped in one
                               always joined)            part) for ``openai``
                                                         (``tool``: always joined)
null ``content``               ""                        "" (``openai``: no parts)    "" (only non-empty fields of
                                                                                      a message are passed)
message fields                 its pydantic models'      role, content, tool calls,
                               dump, nulls dropped; a    ``reasoning`` (and as
                               user message: role and    ``reasoning_content``),
                               content; a tool call      tool call id, name; others
                               keeps a null ``index``    dropped
no tools, or ``[]``            None; None                None; ``[]`` refused (400)   undefined
floats in ``tojson``           ``1000.0``, ``48.856614``  as SGLang                   C++ stream: ``1000``,
                                                                                      ``48.8566``, ``2.14827e+06``
a request's ``chat_template``  in ``chat_template_       top-level, or in
(server started with           kwargs``; messages shaped ``chat_template_kwargs``
``--trust-request-chat-        by the model's template   (then shaped by the
template``)                                              model's template)
=============================  ========================  ===========================  ==========================

Each profile also names the client-side cache model of the server and where its responses carry output token ids.

llama.cpp decides parts of its shaping by probing the template first (:mod:`agentcache.servers.caps`: does it read
``content`` as a string or as parts, the system message at all, ``arguments`` as an object), merges a system
message the template ignores into the next one, and adds template variables: ``enable_thinking`` (on when the
switch changes the generation prompt), today's date, and its ``--reasoning-preserve`` default. SGLang and vLLM
read the template's syntax tree instead (:mod:`agentcache.servers.formats`): a template that loops over a message's
``content`` gets parts (``openai``), any other a string; each engine has its own rule for spotting the loop. Both
render through transformers (``documents`` None beside messages and tools, no other variable unless the request's
``chat_template_kwargs`` adds one; reasoning is passed through, never stripped or moved, by the servers themselves).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentcache.cache.options import CacheOptions
from agentcache.errors import InputError, TokenizerError
from agentcache.servers.caps import TemplateCaps, llama_cpp_caps
from agentcache.servers.formats import sglang_content_format, vllm_content_format
from agentcache.servers.template import ChatTemplate, FloatFormat, now

ToolShape = Callable[[Mapping[str, Any]], dict[str, Any]]
Reshape = Callable[[list[dict[str, Any]], "ChatTemplate | None"], list[dict[str, Any]]]
Variables = Callable[[ChatTemplate], dict[str, Any]]


@dataclass(frozen=True)
class ServerProfile:
    """One server's request handling before templating, its cache model, and how to ask for output token ids."""

    name: str
    cache: CacheOptions
    tool_shape: ToolShape | None = None
    """Rewrites one tool the way the server's request model re-serializes it; None keeps tools as sent."""
    join_parts: Mapping[str, str] = field(default_factory=dict)
    """Separator the server joins the text parts of a message's ``content`` with, by role (``*``: any other
    role); a role with none keeps the list for the template."""
    parse_arguments: Literal["no", "objects", "any"] = "no"
    """Which assistant tool-call ``arguments`` strings are parsed before templating: none, those that hold a JSON
    object, or any JSON."""
    unparsed_arguments: Literal["keep", "empty"] = "keep"
    """What becomes of an ``arguments`` string that is not parsed: kept as sent, or replaced by ``{}`` (vLLM)."""
    float_format: FloatFormat = "python"
    """How the server's ``tojson`` writes floats: Python's ``repr`` (``1000.0``) or C++'s default stream output,
    6 significant digits like ``%g`` (``1000``, ``48.8566``, ``2.14827e+06``: llama.cpp)."""
    tool_choice_filters: bool = False
    """Whether ``tool_choice`` "none" renders no tools and a named function only that tool (SGLang)."""
    output_ids_request: Mapping[str, Any] = field(default_factory=dict)
    """Request fields that make the server return the generated token ids (non-streaming only)."""
    reshape: Reshape | None = None
    """The server's own pass over the messages after the per-message shaping above, given the template: for
    llama.cpp, its message model and the rewrites its template probes call for (:func:`_llama_cpp_messages`)."""
    variables: Variables | None = None
    """Template variables the server adds beyond messages, tools and the special tokens."""
    undefined_tools: bool = False
    """Whether ``tools`` is left undefined, not None, when the request has none or an empty list (llama.cpp)."""
    keeps_empty_tools: bool = True
    """Whether an empty ``tools`` list reaches the template as ``[]``; SGLang passes None for it."""
    retries_bare_functions: bool = False
    """Whether a template that fails on the tools is rendered again with each tool's bare ``function`` object
    (SGLang's second try, for templates that expect tools without the OpenAI wrapper)."""
    request_template: tuple[Literal["chat_template", "chat_template_kwargs"], ...] = ()
    """Where a request may carry a chat template of its own, which the server then renders instead of the model's
    (when started to trust it): top-level ``chat_template`` (vLLM: the messages are shaped by that template's
    content format) or ``chat_template_kwargs.chat_template`` (shaped by the model's own template's format)."""
    cached_on_error: tuple[str, ...] = ()
    """Starts of the error messages the server answers with after it has evaluated the prompt, which is then in
    its cache all the same (llama.cpp fails a request whose output its parser cannot read, after generating it)."""

    def cached(self, status: int | None, error: str | None) -> bool:
        """Whether a request that got this answer is in the server's cache: a 2xx, or an error it gives only after
        evaluating the prompt."""
        if status is not None and 200 <= status < 300:
            return True
        return status is not None and error is not None and error.startswith(self.cached_on_error)

    def template_variables(self, template: ChatTemplate) -> dict[str, Any]:
        """The variables this server adds for ``template`` (``chat_template_kwargs`` override them)."""
        return self.variables(template) if self.variables else {}

    def template_inputs(
        self, request: Mapping[str, Any], template: ChatTemplate | None = None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """``(messages, tools)`` as the server hands them to the chat template. A server that reshapes by what
        the template reads (llama.cpp) needs ``template``; without it, its defaults stand."""
        messages = request.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
            raise InputError("$.messages: a chat request needs a list of message objects")
        shaped = [self._message(m) for m in messages]
        if self.reshape is not None:
            shaped = self.reshape(shaped, template)
        tools = request.get("tools")
        if not isinstance(tools, list):
            return shaped, None
        shape = self.tool_shape
        kept = [shape(t) if shape else dict(t) for t in tools if isinstance(t, Mapping)]
        if self.tool_choice_filters:
            kept = _chosen(kept, request.get("tool_choice"))
        keep_empty = tools == [] and self.keeps_empty_tools and not self.undefined_tools
        return shaped, kept if kept or keep_empty else None

    def _message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(message)
        content = out.get("content")
        separator = self.join_parts.get(str(out.get("role")), self.join_parts.get("*"))
        if separator is not None and isinstance(content, list):
            texts = [p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
            if len(texts) == len(content):  # text only: other parts stay for the template to refuse or render
                out["content"] = separator.join(t if isinstance(t, str) else "" for t in texts)
        calls = out.get("tool_calls")
        if self.parse_arguments != "no" and isinstance(calls, list):
            out["tool_calls"] = [self._call(c) for c in calls]
        return out

    def _call(self, call: Any) -> Any:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("arguments"), str):
            return call
        try:
            arguments: Any = json.loads(function["arguments"])
            parsed = self.parse_arguments == "any" or isinstance(arguments, dict)
        except ValueError:
            parsed = False
        if not parsed:  # the server keeps, empties or rejects what it does not parse
            if self.unparsed_arguments == "keep":
                return call
            arguments = {}
        return {**call, "function": {**function, "arguments": arguments}}


def _chosen(tools: list[dict[str, Any]], choice: Any) -> list[dict[str, Any]]:
    if choice == "none":
        return []
    name = choice.get("function", {}).get("name") if isinstance(choice, Mapping) else None
    if isinstance(name, str):
        return [t for t in tools if _function(t).get("name") == name]
    return tools


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    function = tool.get("function")
    return function if isinstance(function, Mapping) else {}


_SGLANG_FUNCTION_KEYS = ("description", "name", "parameters", "strict", "defer_loading")


def _sglang_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    """SGLang's pydantic ``Function``: known keys only, in the order sent, then the missing ones of
    description, name and parameters as null; ``strict`` and ``defer_loading`` only when set."""
    sent = _function(tool)
    named, optional = _SGLANG_FUNCTION_KEYS[:3], _SGLANG_FUNCTION_KEYS[3:]
    function = {k: v for k, v in sent.items() if k in named or (k in optional and v is not None)}
    for name in named:
        function.setdefault(name, None)
    return {"type": tool.get("type", "function"), "function": function, "defer_loading": tool.get("defer_loading")}


def _vllm_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = _function(tool)
    shaped = {name: function.get(name) for name in ("name", "description", "parameters")}
    if function.get("strict") is not None:
        shaped["strict"] = function["strict"]
    return {"type": tool.get("type", "function"), "function": shaped}


def _llama_cpp_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = _function(tool)
    shaped = {"name": function.get("name"), "description": function.get("description") or ""}
    shaped["parameters"] = function.get("parameters") or {}
    return {"type": "function", "function": shaped}


def _text_parts(content: list[Any], server: str) -> list[str]:
    """The texts of a list ``content``; a media part needs the server's multimodal processing, not modelled."""
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise TokenizerError(f"{server} takes only text parts here, not {kind!r}")
    return texts


_SGLANG_MESSAGE_FIELDS = (
    "content", "tool_call_id", "name", "phase", "reasoning_content", "tool_calls", "tools", "prefix"
)


def _sglang_messages(messages: list[dict[str, Any]], template: ChatTemplate | None) -> list[dict[str, Any]]:
    """SGLang's ``_apply_jinja_template``: each message through its pydantic model and ``model_dump`` (a user
    message keeps role and content only; the others every field of the generic model, in its order), tool-call
    arguments parsed into objects, null content as "", list content as the template's format asks (text parts
    joined with " " for a ``string`` template; a tool message's always), then the top-level nulls dropped."""
    content_format = sglang_content_format(template.source) if template is not None else "string"
    shaped = []
    for message in messages:
        role = str(message.get("role")).lower()
        fields = ("content",) if role == "user" else _SGLANG_MESSAGE_FIELDS
        out: dict[str, Any] = {"role": role, **{k: message.get(k) for k in fields}}
        if isinstance(out.get("tool_calls"), list):
            out["tool_calls"] = [_sglang_call(c) for c in out["tool_calls"]]
        if isinstance(out.get("tools"), list):
            out["tools"] = [_sglang_tool(t) for t in out["tools"] if isinstance(t, Mapping)]
        content = out["content"]
        if content is None:
            out["content"] = ""
        elif isinstance(content, list):
            texts = _text_parts(content, "SGLang")
            if content_format == "string" or role == "tool":  # normalize_tool_content joins a tool's parts
                out["content"] = " ".join(texts)
            else:
                out["content"] = [{"type": "text", "text": t} for t in texts]
        shaped.append({k: v for k, v in out.items() if v is not None})
    return shaped


def _sglang_call(call: Any) -> dict[str, Any]:
    """SGLang's ``ToolCall`` model dumped (``index`` stays, null), its arguments parsed as the server requires:
    a JSON object, anything else is refused (400)."""
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        raise TokenizerError("SGLang refuses a tool call without a function object")
    function: Mapping[str, Any] = call["function"]
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            raise TokenizerError(f"SGLang refuses tool-call arguments that are not JSON ({exc})") from exc
        if not isinstance(arguments, dict):
            raise TokenizerError("SGLang refuses tool-call arguments that are not a JSON object")
    return {
        "id": call.get("id"),
        "index": call.get("index"),
        "type": call.get("type", "function"),
        "function": {"name": function.get("name"), "arguments": arguments},
    }


def _vllm_messages(messages: list[dict[str, Any]], template: ChatTemplate | None) -> list[dict[str, Any]]:
    """vLLM's ``parse_chat_messages``: each message rebuilt from role and content (null as no parts; parts kept as
    ``{"type": "text", ...}`` for an ``openai`` template, else joined with "\\n"; a tool message's always joined),
    plus the fields its role keeps: an assistant's tool calls (in the order of the request model's fields) and
    reasoning under both names, a tool's call id, any role's name. Then ``_postprocess_messages``: an empty
    tool-call list is dropped and every ``arguments`` becomes an object ({} for anything else). A ``developer``
    message becomes ``system`` (all merged into the first) when the template never names that role."""
    source = template.source if template is not None else ""
    content_format = vllm_content_format(source) if template is not None else "string"
    shaped = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        texts = _text_parts([] if content is None else [content] if isinstance(content, str) else content, "vLLM")
        out: dict[str, Any] = {"role": role}
        if content_format == "openai" and role != "tool":
            out["content"] = [{"type": "text", "text": t} for t in texts]
        else:
            out["content"] = "\n".join(texts)
        if role == "assistant":
            calls = message.get("tool_calls")
            if isinstance(calls, list) and calls:
                out["tool_calls"] = [_vllm_call(c) for c in calls]
            reasoning = message.get("reasoning")
            if reasoning is None:
                reasoning = message.get("reasoning_content")
            if reasoning is not None:
                out["reasoning"] = out["reasoning_content"] = reasoning
        elif role == "tool" and "tool_call_id" in message:
            out["tool_call_id"] = message["tool_call_id"]
        if isinstance(message.get("name"), str):
            out["name"] = message["name"]
        if role == "developer":
            out["tools"] = message.get("tools")
        shaped.append(out)
    if any(m["role"] == "developer" for m in shaped) and "'developer'" not in source and '"developer"' not in source:
        system = [{"role": "system", **{k: v for k, v in m.items() if k not in ("role", "tools")}} for m in shaped]
        shaped = _system_first([s if m["role"] == "developer" else m for m, s in zip(shaped, system, strict=True)])
    return shaped


_VLLM_CALL_FIELDS = ("id", "function", "type")  # the request model's field order, which validation rebuilds


def _vllm_call(call: Any) -> dict[str, Any]:
    """A tool call as vLLM's request model validates it (its fields in the model's order, extra keys after) with
    ``arguments`` an object: parsed when it is a JSON object, {} for anything else (vLLM coerces rather than
    refuse, so that a bad call in the history does not fail every later turn)."""
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        raise TokenizerError("vLLM refuses a tool call without a function object")
    function = call["function"]
    arguments = function.get("arguments")
    if isinstance(arguments, str) and arguments:
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = None
    shaped = {"arguments": arguments if isinstance(arguments, dict) else {}, "name": function.get("name")}
    shaped.update((k, v) for k, v in function.items() if k not in shaped)
    out = {k: shaped if k == "function" else call[k] for k in _VLLM_CALL_FIELDS if k in call}
    out.update((k, v) for k, v in call.items() if k not in out)
    return out


def _system_first(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """vLLM's ``_consolidate_system_messages``: when a system message is not first, the non-empty texts of all
    of them become one system message, first."""
    if not any(m["role"] == "system" for m in messages[1:]):
        return messages
    texts = []
    for message in messages:
        content = message.get("content", "") if message["role"] == "system" else ""
        text = "\n".join(p["text"] for p in content if "text" in p) if isinstance(content, list) else content
        if text:
            texts.append(text)
    return [{"role": "system", "content": "\n\n".join(texts)}, *(m for m in messages if m["role"] != "system")]


def _transformers_variables(template: ChatTemplate) -> dict[str, Any]:
    """What transformers' ``apply_chat_template`` passes beside messages, tools and the special tokens."""
    return {"documents": None}


SGLANG = ServerProfile(
    "sglang",
    CacheOptions("sglang"),
    tool_shape=_sglang_tool,
    tool_choice_filters=True,
    keeps_empty_tools=False,
    retries_bare_functions=True,
    output_ids_request={"return_token_ids": True},
    reshape=_sglang_messages,
    variables=_transformers_variables,
    request_template=("chat_template_kwargs",),
)
VLLM = ServerProfile(
    "vllm",
    CacheOptions("vllm", block_size=16),  # vLLM's default --block-size; its CPU build needs a multiple of 32
    tool_shape=_vllm_tool,
    output_ids_request={"return_token_ids": True},
    reshape=_vllm_messages,
    variables=_transformers_variables,
    request_template=("chat_template", "chat_template_kwargs"),
)


def _llama_cpp_messages(messages: list[dict[str, Any]], template: ChatTemplate | None) -> list[dict[str, Any]]:
    """llama-server's messages as its template sees them (``common/chat.cpp``): each message through its
    ``common_chat_msg`` model and back, then the rewrites the template's capabilities call for."""
    caps = llama_cpp_caps(template) if template is not None else TemplateCaps()
    source = template.source if template is not None else ""
    trim = "You have access to the following functions in JSONSchema format" in source  # functionary's workaround
    shaped = [_llama_cpp_message(m, trim) for m in messages]
    for message in shaped:
        message["content"] = _llama_cpp_content(message["content"], caps)
        if message["role"] == "developer" and "<|channel|>" not in source:
            message["role"] = "system"
        if caps.object_arguments:
            for call in message.get("tool_calls", ()):
                call["function"]["arguments"] = _parsed_arguments(call["function"]["arguments"])
    if _reasons_as_thinking(source):
        for message in shaped:
            if "reasoning_content" in message:
                message["thinking"] = message["reasoning_content"]
                if "<|channel|>" in source and message.get("tool_calls"):
                    del message["content"]
    if not caps.system_role and shaped and shaped[0]["role"] == "system":  # merged into the next message
        first = shaped.pop(0)
        if shaped:
            if not isinstance(first["content"], str) or not isinstance(shaped[0]["content"], str):
                raise TokenizerError("llama.cpp merges the system message into the next one only as text")
            shaped[0]["content"] = first["content"] + "\n" + shaped[0]["content"]
    if _ministral_3(source):
        shaped = [_in_blocks(m) if m["role"] in ("system", "assistant") else m for m in shaped]
    if "'<|tool_call>call:'" in source and "{#- OpenAI Chat Completions:" not in source:
        shaped = _gemma4_model_turns(shaped)
    return shaped


def _gemma4_model_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """llama.cpp's workaround for the older Gemma 4 templates (``common/parsers/gemma4.cpp``), which read tool
    results from the assistant's ``tool_responses``: an assistant message with tool calls takes the tool messages
    after it (their content parsed as JSON when it is JSON, named after the matching call) and the plain assistant
    reply after those, as one message."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        calls = message.get("tool_calls")
        i += 1
        if message.get("role") != "assistant" or not calls:
            out.append(message)
            continue
        responses: list[dict[str, Any]] = []
        while i < len(messages) and messages[i].get("role") == "tool":
            result = messages[i]
            response: Any = result.get("content")
            if isinstance(response, str):
                with contextlib.suppress(ValueError):
                    response = json.loads(response)
            index = len(responses)
            name = calls[index]["function"].get("name") if index < len(calls) else None
            responses.append({"name": name or result.get("tool_call_id", ""), "response": response})
            i += 1
        turn: dict[str, Any] = {"role": "assistant", "tool_calls": calls}
        if responses:
            turn["tool_responses"] = responses
        reply = messages[i] if i < len(messages) else None
        if (
            reply is not None
            and reply.get("role") == "assistant"
            and not reply.get("tool_calls")
            and reply.get("content")
        ):
            turn["content"] = reply["content"]
            i += 1
        if isinstance(message.get("reasoning_content"), str):
            turn["reasoning_content"] = message["reasoning_content"]
        out.append(turn)
    return out


def _ministral_3(source: str) -> bool:
    """llama.cpp's own handler for Ministral 3 / Magistral (``common/parsers/ministral3.cpp``), by its markers."""
    return all(m in source for m in ("[SYSTEM_PROMPT]", "[TOOL_CALLS]", "[ARGS]")) and "[CALL_ID]" not in source


def _in_blocks(message: dict[str, Any]) -> dict[str, Any]:
    """A system or assistant message as that handler passes it: reasoning first as a ``thinking`` block, then
    the content as text blocks."""
    blocks: list[Any] = []
    out = {k: v for k, v in message.items() if k != "reasoning_content"}
    if "reasoning_content" in message:
        blocks.append({"type": "thinking", "thinking": message["reasoning_content"]})
    content = message.get("content")
    if isinstance(content, str):
        blocks.append({"type": "text", "text": content})
    elif isinstance(content, list):
        blocks.extend(content)
    out["content"] = blocks
    return out


def _reasons_as_thinking(source: str) -> bool:
    """Whether llama.cpp renders this template through a handler of its own that copies ``reasoning_content`` to
    the ``thinking`` field the template reads: gpt-oss (which also drops the content of a message with tool calls)
    and LFM2 (``common/parsers/gpt-oss.cpp``, ``lfm2.cpp``; detected by the same markers)."""
    lfm2 = "<|tool_list_start|>" in source and "<|tool_list_end|>" in source
    lfm25 = "List of tools: [" in source and "<|tool_list_start|>" not in source
    return "<|channel|>" in source or lfm2 or lfm25


def _llama_cpp_message(message: Mapping[str, Any], trim: bool) -> dict[str, Any]:
    """``common_chat_msgs_parse_oaicompat`` then ``to_json_oaicompat``: null or empty content becomes "", only
    non-empty fields survive, in the server's key order, and arguments are a string (an object is dumped)."""
    strip: Callable[[str], str] = str.strip if trim else str
    content = message.get("content")
    out: dict[str, Any] = {"role": message.get("role")}
    if isinstance(content, list) and content:
        other = [p.get("type") for p in content if not (isinstance(p, Mapping) and p.get("type") == "text")]
        if other:  # media parts need a multimodal projector, which the client does not model
            raise TokenizerError(f"llama.cpp takes only text parts here, not {other[0]!r}")
        out["content"] = [{"type": "text", "text": strip(p.get("text", ""))} for p in content]
    else:
        out["content"] = strip(content) if isinstance(content, str) else ""
    for key in ("reasoning_content", "name", "tool_call_id"):
        value = message.get(key)
        if isinstance(value, str) and (value := strip(value)):
            out[key] = value
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        shaped = {"type": "function", "function": {"name": function.get("name"), "arguments": arguments}}
        if call.get("id"):
            shaped["id"] = call["id"]
        calls.append(shaped)
    if calls:
        out["tool_calls"] = calls
    return out


def _llama_cpp_content(content: str | list[dict[str, Any]], caps: TemplateCaps) -> Any:
    """Content the way the template reads it: parts joined with newlines for a template that reads only
    strings, a string wrapped in one text part for a template that reads only parts."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if caps.typed_content and not caps.string_content else content
    if caps.string_content and not caps.typed_content:
        return "\n".join(p["text"] for p in content if p["type"] == "text")
    return content


def _parsed_arguments(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except ValueError as exc:  # llama-server answers 500
        raise TokenizerError(
            f"llama.cpp parses tool-call arguments for this template, and these are not JSON ({exc})"
        ) from exc


def _llama_cpp_variables(template: ChatTemplate) -> dict[str, Any]:
    """``common_chat_extra_context``, the thinking switch and the reasoning history: llama-server enables thinking
    when the template renders it, passes today's date in two formats, and (its ``--reasoning-preserve`` default)
    asks every template to keep earlier turns' reasoning under each name templates use for it."""
    today = now()
    return {
        "preserve_reasoning": True,
        "preserve_thinking": True,
        "clear_thinking": False,
        "truncate_history_thinking": False,
        "drop_thinking": False,
        "bos_token": template.special_tokens.get("bos_token", ""),
        "eos_token": template.special_tokens.get("eos_token", ""),
        "enable_thinking": llama_cpp_caps(template).thinking,
        "datetime": today.strftime("%b %d %Y"),
        "date_string": today.strftime("%d %b %Y"),
    }


LLAMA_CPP = ServerProfile(
    "llama.cpp",
    CacheOptions("llama.cpp"),
    tool_shape=_llama_cpp_tool,
    float_format="cpp",
    output_ids_request={"return_tokens": True, "verbose": True},
    reshape=_llama_cpp_messages,
    variables=_llama_cpp_variables,
    undefined_tools=True,
    cached_on_error=("The model produced output that does not match the expected",),  # common/chat.cpp, parse
)
OPENAI = ServerProfile("openai", CacheOptions("openai"))
ANTHROPIC = ServerProfile("anthropic", CacheOptions("anthropic"))

PROFILES = {p.name: p for p in (SGLANG, VLLM, LLAMA_CPP, OPENAI, ANTHROPIC)}


def get_profile(name: str | ServerProfile) -> ServerProfile:
    """A profile by name (``sglang``, ``vllm``, ``llama.cpp``, ``openai``, ``anthropic``), or the one given."""
    if isinstance(name, ServerProfile):
        return name
    try:
        return PROFILES[name]
    except KeyError:
        raise InputError(f"unknown server {name!r}: use one of {', '.join(PROFILES)}") from None
