"""A model's own chat template, rendered on the client exactly as the servers render it.

Servers (SGLang and vLLM through transformers, llama.cpp through its Jinja port) render the Jinja template
stored in the model's ``tokenizer_config.json`` (or ``chat_template.jinja``) with the same conventions:
``trim_blocks`` and ``lstrip_blocks``, the ``loopcontrols`` extension, a ``tojson`` filter that keeps non-ASCII
characters and Python's default separators, ``raise_exception`` and ``strftime_now``. Predicting the server's
prompt tokens to the token needs the same text, so the same conventions are reproduced here. ``jinja2`` is an
optional dependency (``agentcache[hf]``), imported when a template is loaded.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NoReturn

from agentcache.errors import TokenizerError

FloatFormat = Literal["python", "cpp"]
"""Whose Jinja runtime renders: Python's jinja2 (transformers: SGLang, vLLM) or llama.cpp's C++ port, which
writes floats as a C++ stream does, lets a missing attribute of a missing value stay undefined, lets a template
append to its own lists (transformers' sandbox forbids it), and has no markup (``safe`` changes nothing)."""


_CLOCK: ContextVar[datetime | None] = ContextVar("agentcache_template_clock", default=None)


def now() -> datetime:
    """The time templates render (``strftime_now``, the date variables servers pass): the wall clock, unless
    :func:`fixed_clock` holds it."""
    return _CLOCK.get() or datetime.now()


@contextmanager
def fixed_clock(when: datetime | None) -> Iterator[None]:
    """Render as if it were ``when`` (None: the wall clock): a turn as the server rendered it at its own time, or a
    template rendered at two dates to see whether the date is in its prompt."""
    token = _CLOCK.set(when)
    try:
        yield
    finally:
        _CLOCK.reset(token)


class ChatTemplate:
    """One Jinja chat template plus the special-token strings it may refer to (``bos_token``, ``eos_token``)."""

    def __init__(
        self,
        source: str,
        special_tokens: Mapping[str, str] | None = None,
        name: str = "chat template",
        float_format: FloatFormat = "python",
    ) -> None:
        self.name = name
        self.source = source
        self.float_format: FloatFormat = float_format
        self._template = self.compiled()
        self.special_tokens = dict(special_tokens or {})

    def compiled(self, prepare: Callable[[Any], None] | None = None) -> Any:
        """The source compiled in a fresh environment of the servers' conventions; ``prepare`` may adjust the
        environment first (the capability probes watch what the template reads)."""
        try:
            from jinja2 import ChainableUndefined, Undefined, nodes
            from jinja2.ext import Extension, loopcontrols
            from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment
        except ImportError as exc:
            raise TokenizerError(
                f"{self.name}: rendering a chat template needs the optional package jinja2; "
                "install it with `pip install 'agentcache[hf]'`"
            ) from exc

        class Generation(Extension):
            """``{% generation %}...{% endgeneration %}`` marks the assistant's tokens for training; servers
            render its body unchanged (transformers' AssistantTracker, llama.cpp's no-op)."""

            tags = {"generation"}  # noqa: RUF012 (jinja2 declares it a set)

            def parse(self, parser: Any) -> Any:
                lineno = next(parser.stream).lineno
                body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
                return nodes.Scope(body, lineno=lineno)

        class CppUndefined(ChainableUndefined):
            """llama.cpp's undefined: a member of it is undefined too, and a string plus it is the string."""

            def __add__(self, other: Any) -> Any:
                return other if isinstance(other, str) else super().__add__(other)

            __radd__ = __add__

        sandbox = ImmutableSandboxedEnvironment if self.float_format == "python" else SandboxedEnvironment
        env = sandbox(
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[loopcontrols, Generation],
            undefined=Undefined if self.float_format == "python" else CppUndefined,
        )
        env.filters["tojson"] = _tojson if self.float_format == "python" else _tojson_cpp
        if self.float_format == "cpp":  # llama.cpp has no markup: "x"|safe + text is plain concatenation, unescaped
            env.filters["safe"] = str
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: now().strftime(fmt)
        if prepare is not None:
            prepare(env)
        try:
            return env.from_string(self.source)
        except Exception as exc:  # jinja2.TemplateSyntaxError and friends
            raise TokenizerError(
                f"{self.name}: not a valid Jinja template ({exc}); pass the model's chat_template"
            ) from exc

    @classmethod
    def from_pretrained(cls, model_dir: str | Path, float_format: FloatFormat = "python") -> ChatTemplate:
        """Load the template saved with a model: ``chat_template.jinja`` if present, else ``tokenizer_config.json``.
        ``float_format`` is how the rendering server writes floats in ``tojson`` (see :class:`ServerProfile`)."""
        folder = Path(model_dir)
        config_path = folder / "tokenizer_config.json"
        try:
            config: dict[str, Any] = json.loads(config_path.read_text()) if config_path.is_file() else {}
        except (OSError, ValueError) as exc:
            raise TokenizerError(f"{config_path}: cannot read it as JSON ({exc})") from exc
        jinja = folder / "chat_template.jinja"
        source = jinja.read_text() if jinja.is_file() else config.get("chat_template")
        if isinstance(source, list):  # named templates: the server uses "default"
            source = next((t.get("template") for t in source if t.get("name") == "default"), None)
        if not isinstance(source, str):
            raise TokenizerError(
                f"{folder}: no chat template found (looked for chat_template.jinja and tokenizer_config.json's "
                "chat_template); point at the folder the server loads the model from"
            )
        special = {k: text for k, v in config.items() if k.endswith("_token") and (text := _token_text(v)) is not None}
        return cls(source, special, name=str(folder), float_format=float_format)

    def render(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        *,
        undefined_tools: bool = False,
        **extra: Any,
    ) -> str:
        """The prompt text, as ``apply_chat_template(..., tokenize=False)`` gives it. ``undefined_tools`` leaves
        ``tools`` undefined when there are none, as llama.cpp does (transformers passes None); the difference
        shows in templates that test ``tools is defined``. ``extra`` variables override the special tokens."""
        return "".join(self._chunks(messages, tools, add_generation_prompt, undefined_tools, extra, None))

    def render_lines(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        *,
        undefined_tools: bool = False,
        **extra: Any,
    ) -> tuple[str, list[tuple[int, int]]]:
        """:meth:`render`'s text, and where each piece of it came from: ``(offset in the text, line of the
        template)`` for each piece the template wrote, in order (a macro's output counts as its call's line)."""
        lines: list[tuple[int, int]] = []
        text = "".join(self._chunks(messages, tools, add_generation_prompt, undefined_tools, extra, lines))
        return text, lines

    def _chunks(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        add_generation_prompt: bool,
        undefined_tools: bool,
        extra: Mapping[str, Any],
        lines: list[tuple[int, int]] | None,
    ) -> list[str]:
        variables = {"messages": messages, "add_generation_prompt": add_generation_prompt, **self.special_tokens}
        if tools is not None or not undefined_tools:
            variables["tools"] = tools
        template = self._template
        chunks: list[str] = []
        offset = 0
        try:
            generator = template.root_render_func(template.new_context({**variables, **extra}))
            for chunk in generator:
                if lines is not None and generator.gi_frame is not None:  # suspended at the line that wrote it
                    lines.append((offset, template.get_corresponding_lineno(generator.gi_frame.f_lineno)))
                    offset += len(chunk)
                chunks.append(chunk)
        except TokenizerError:
            raise
        except Exception as exc:  # the template's own errors: undefined names, type errors in expressions
            raise TokenizerError(f"{self.name}: the chat template failed on this request ({exc})") from exc
        return chunks


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _tojson_cpp(value: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
                sort_keys: bool = False) -> str:
    """llama.cpp's ``tojson``: Python's layout, but floats as a C++ stream writes them (6 significant digits)."""
    if indent is not None or separators is not None or sort_keys or ensure_ascii:
        return _tojson(_cpp_floats(value), ensure_ascii, indent, separators, sort_keys)
    return _cpp_json(value)


def _cpp_json(value: Any) -> str:
    if isinstance(value, float):
        return format(value, "g")
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k), ensure_ascii=False)}: {_cpp_json(v)}" for k, v in value.items())
        return "{" + ", ".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_cpp_json(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _cpp_floats(value: Any) -> Any:
    """Floats the C++ way, for the rare tojson call with options: ints where %g has no fraction."""
    if isinstance(value, float):
        text = format(value, "g")
        return int(text) if text.lstrip("-").isdigit() else float(text)
    if isinstance(value, dict):
        return {k: _cpp_floats(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cpp_floats(v) for v in value]
    return value


def _raise(message: str) -> NoReturn:
    raise TokenizerError(f"the chat template raised: {message}")


def _token_text(value: Any) -> str | None:
    """``bos_token`` and friends are a string or an AddedToken-like ``{"content": ...}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None
