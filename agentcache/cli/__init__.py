"""The ``agentcache`` command. Each subcommand lives in its own module with ``register`` and ``run``.

Exit codes, as linters use them: 0 success, 1 findings (commands that report findings), 2 usage or input error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from agentcache import __version__
from agentcache.cli import canon, demo, explain, lint, report, simulate, template
from agentcache.cli.options import help_text
from agentcache.errors import AgentCacheError

COMMANDS = (demo, explain, simulate, lint, template, canon, report)
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, as every other error of the CLI (subcommands inherit the class). Descriptions
    come from module docstrings: their reStructuredText quotes are dropped for --help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["description"] = help_text(kwargs.get("description"))
        kwargs["epilog"] = help_text(kwargs.get("epilog"))
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}; see {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="agentcache", description="Make LLM agents hit the server's prefix (KV) cache.")
    parser.add_argument("--version", action="version", version=f"agentcache {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except AgentCacheError as exc:
        print(f"agentcache {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return code
