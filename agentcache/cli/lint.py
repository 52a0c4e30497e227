"""``agentcache lint PATH...``: report what breaks the prefix cache between calls (exit 1 on findings)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from agentcache.cache.options import CACHE_KINDS
from agentcache.cli.options import add_cache_options, cache_options
from agentcache.cli.style import Style, terminal_width
from agentcache.lint import FORMATS, LintResult, lint_paths, load, render
from agentcache.lint.output import LINT, Tool, statistics


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
    parser.add_argument(
        "--select", type=_codes, metavar="CODES", help="only these codes or prefixes, comma-separated (AC1,AC201)"
    )
    parser.add_argument("--ignore", type=_codes, metavar="CODES", help="leave out these codes or prefixes")
    parser.add_argument("--statistics", action="store_true", help="count findings per rule instead of listing them")
    parser.add_argument(
        "--skip-unrecognized",
        action="store_true",
        help="skip a named file its checker does not recognize (a .json without tools) with a note, as a walk does, "
        "instead of exiting 2 (the pre-commit hook names every staged file)",
    )
    parser.add_argument(
        "--jobs",
        type=_jobs,
        default=os.cpu_count() or 1,
        metavar="N",
        help="check files in N processes (default: the number of CPUs; 1 checks in this one)",
    )
    parser.set_defaults(run=run)


def _jobs(text: str) -> int:
    jobs = int(text)
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{text}: give 1 or more processes")
    return jobs


def _codes(text: str) -> list[str]:
    return [code.strip().upper() for code in text.split(",") if code.strip()]


def run(args: argparse.Namespace) -> int:
    # [tool.agentcache.lint] of the nearest pyproject.toml, as ruff finds its own; the command line adds to it.
    config = load(Path.cwd()).with_rules(args.select, args.ignore)
    result = lint_paths(
        args.paths,
        fix=args.fix,
        config=config,
        cache=cache_options(args, args.cache),
        jobs=args.jobs,
        skip_unrecognized=args.skip_unrecognized,
    )
    return report(result, args.format, counts=args.statistics)


def report(result: LintResult, fmt: str, tool: Tool = LINT, counts: bool = False) -> int:
    """Print ``result`` in ``fmt`` (with ``counts``, a count per rule instead) and return the exit code: 1 when
    findings are left, else 0 (``agentcache template`` reports the same way)."""
    # A file name that is not UTF-8 holds surrogates: write them as escapes, so the output stays valid UTF-8.
    paint, width = Style(sys.stdout), terminal_width()
    text = statistics(result, tool) if counts else render(result, fmt, paint, width, tool)
    sys.stdout.buffer.write(text.encode("utf-8", "backslashreplace"))
    sys.stdout.flush()
    return 1 if result.findings else 0
