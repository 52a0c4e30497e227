"""Options shared by the commands that read traces and model a server's cache."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from agentcache.cache.options import CACHE_KINDS, CacheKind, CacheOptions
from agentcache.cli.style import Progress
from agentcache.drift.trace import Trace, parse_trace, parse_trace_bytes
from agentcache.errors import InputError

TRACE_HELP = "a JSONL trace (docs/trace-format.md), a file of request bodies, one request body, or - for stdin"


def help_text(text: str | None) -> str | None:
    """A module docstring as --help shows it: reStructuredText's ``literal`` quotes dropped."""
    return None if text is None else re.sub(r"``(.*?)``", r"\1", text, flags=re.DOTALL)


class PositiveInt(argparse.Action):
    """Parses an option's value as a whole number of at least 1. A bad value is a usage error naming the option
    and what it expected, not argparse's "invalid int value" (or the name of a type function)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        text = str(values)
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            parser.error(f"{option_string or self.dest} must be a positive integer, got {text!r}")
        setattr(namespace, self.dest, value)


def add_positive_int(
    parser: argparse._ActionsContainer, flag: str, help: str, default: int | None = None, metavar: str = "N"
) -> None:
    """Add a numeric option: every numeric option of the CLI is a count of at least 1, checked by one rule."""
    parser.add_argument(flag, action=PositiveInt, default=default, metavar=metavar, help=help)


def load_trace(command: str, path: str) -> Trace:
    """The trace at ``path`` (``-`` is stdin): JSONL, or one request body (or trace record) pretty-printed over
    many lines. An empty trace gets a warning on stderr, since every figure of it is zero."""
    name = "stdin" if path == "-" else path
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read trace {name}: {exc.strerror}") from None
    trace = parse_trace_bytes(data)
    if trace.problems and data.lstrip().startswith(b"{"):
        try:
            whole = json.loads(data)
        except (ValueError, RecursionError):
            whole = None
        if isinstance(whole, dict):  # one JSON object spread over many lines, not JSONL
            trace = parse_trace([json.dumps(whole)])
    if not trace.records and not trace.problems:
        print(f"agentcache {command}: warning: {name} holds no requests; nothing to analyse", file=sys.stderr)
    return trace


def has_breakpoint(value: object) -> bool:
    """Whether a request marks a ``cache_control`` breakpoint anywhere (tools, system blocks, content blocks)."""
    if isinstance(value, dict):
        return "cache_control" in value or any(has_breakpoint(v) for v in value.values())
    if isinstance(value, list):
        return any(has_breakpoint(v) for v in value)
    return False


def anthropic_note(kinds: Collection[str], trace: Trace) -> str | None:
    """Why the Anthropic model caches nothing, when it does not: it caches only up to breakpoints, and no request
    of the trace marked one."""
    if "anthropic" not in kinds or not trace.records or any(has_breakpoint(r.request) for r in trace.records):
        return None
    return "note: Anthropic caches only up to cache_control breakpoints, and no request here has one: hence 0% cached"


def add_trace_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help=TRACE_HELP)
    parser.add_argument("--tokenizer", default="o200k_base", help="o200k_base, cl100k_base or a tokenizer.json")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")


def add_cache_options(parser: argparse.ArgumentParser) -> None:
    add_positive_int(parser, "--capacity", "KV capacity in tokens (default: unbounded)", metavar="TOKENS")
    add_positive_int(parser, "--page-size", "SGLang page size (default 1)", default=1)
    add_positive_int(parser, "--block-size", "vLLM block size (default 16)", default=16)
    parser.add_argument(
        "--model-dir", metavar="DIR", help="the model folder the server loads: count the server's own prompt tokens"
    )
    parser.add_argument(
        "--model",
        metavar="NAME",
        help="the hosted model (gpt-5.6, claude-opus-4-8, ...): apply its caching rule (docs/model-hosted.md)",
    )


def cache_options(args: argparse.Namespace, kind: str) -> CacheOptions:
    assert kind in CACHE_KINDS
    chosen: CacheKind = kind  # type: ignore[assignment]
    return CacheOptions(
        chosen,
        capacity=args.capacity,
        page_size=args.page_size,
        block_size=args.block_size,
        model=args.model,
        model_dir=args.model_dir,
    )


#: Traces at least this long get a progress bar (on a TTY).
LONG_TRACE = 200


def long_trace_progress(label: str, total: int) -> Progress | None:
    return Progress(label, total) if total >= LONG_TRACE else None


def report_problems(command: str, path: str, trace: Trace) -> int:
    """Print one line per unreadable trace line; the exit code the command should end with."""
    for problem in trace.problems:
        print(f"agentcache {command}: error: {path}:{problem.line}: {problem.message}", file=sys.stderr)
    return 2 if trace.problems else 0
