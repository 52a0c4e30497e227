"""``agentcache lint PATH...``: report what breaks the prefix cache between calls (exit 1 on findings)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from agentcache.cache.options import CACHE_KINDS
from agentcache.cli.options import add_cache_options, cache_options
from agentcache.cli.style import Style, terminal_width
from agentcache.lint import FORMATS, LintResult, lint_paths, render
from agentcache.lint.output import LINT, Tool


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "lint",
        help="find cache-breaking drift in Python sources and tool-schema files",
        description=__doc__,
        epilog="Exit codes: 0 no findings, 1 findings left, 2 usage or input error. Rules: docs/lint.md.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files (.py, .json, .jsonl) or directories to walk")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    parser.add_argument(
        "--fix", action="store_true", help="rewrite tool-schema files in canonical form and report what changed"
    )
    parser.add_argument(
        "--cache", choices=CACHE_KINDS, default="sglang", help="server model to replay traces through (default sglang)"
    )
    add_cache_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return report(lint_paths(args.paths, fix=args.fix, cache=cache_options(args, args.cache)), args.format)


def report(result: LintResult, fmt: str, tool: Tool = LINT) -> int:
    """Print ``result`` in ``fmt`` and return the exit code: 1 when findings are left, else 0 (``agentcache
    template`` reports the same way)."""
    # A file name that is not UTF-8 holds surrogates: write them as escapes, so the output stays valid UTF-8.
    text = render(result, fmt, Style(sys.stdout), terminal_width(), tool)
    sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
    sys.stdout.flush()
    return 1 if result.findings else 0
