"""``agentcache canon FILE|-``: print the canonical JSON of one request body."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

from agentcache.canon import CanonicalPolicy, canonical_json, canonicalize
from agentcache.canon.lossless import check_parse
from agentcache.errors import BodyTooLargeError, InputError, NestingTooDeepError, RequestError

#: What the command takes, said in its errors instead of the library's advice to Python callers.
USAGE = 'pass one chat request body (a JSON object with a "messages" array) as FILE, or - to read it from stdin'

_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "canon", help="print the canonical JSON of a request body", description=__doc__
    )
    parser.add_argument("file", help="a JSON request body (OpenAI chat completions or Anthropic Messages), or -")
    parser.add_argument(
        "--relocate-volatile",
        action="store_true",
        help="move system-prompt lines holding timestamps/ids into a trailing message (changes layout)",
    )
    parser.add_argument(
        "--strip-trailing-whitespace", action="store_true", help="remove spaces at the end of prose lines"
    )
    parser.add_argument("--keep-tool-order", action="store_true", help="do not sort tools by name")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    policy = CanonicalPolicy(
        sort_tools=not args.keep_tool_order,
        strip_trailing_whitespace=args.strip_trailing_whitespace,
        relocate_volatile=args.relocate_volatile,
    )
    request = load_json(args.file)
    if not isinstance(request, dict):
        raise InputError(f"$: the request is {_JSON_TYPES.get(type(request), 'a value')}, not a JSON object; {USAGE}")
    if "messages" not in request:
        raise InputError(f'$: not a chat request, it has no "messages" array; {USAGE}')
    try:
        canonical = canonicalize(request, policy)
    except (BodyTooLargeError, NestingTooDeepError) as exc:
        raise InputError(f"{exc.path}: {exc.problem}; agentcache would send this request as it is") from None
    except RequestError as exc:
        raise InputError(f"{exc.path}: {exc.problem}; fix that value and run again") from None
    sys.stdout.buffer.write(canonical_json(canonical) + b"\n")
    return 0


def load_json(name: str) -> Any:
    """Parse a JSON file (``-`` is stdin) as the transport reads a body: a repeated key or a number the parse
    would change is refused with the reason the transport gives for sending such a body as it came."""
    try:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{name} is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{name}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from None
    check_parse(data, value)
    return value
