"""``agentcache template MODEL_DIR``: audit a model's chat template before deploying it.

A synthetic multi-turn agent session of several shapes (tool calls one by one and in parallel with null content,
reasoning in a field and inline, several system messages, a plain chat, a system message mid-session) goes
through the template as the server shapes requests. Every point where turn N+1's prompt does not extend turn N's
is reported with the template construct that does it and the tokens lost per turn, and so is every request shape
the template refuses (exit 1 on findings).
"""

from __future__ import annotations

import argparse
from typing import Any

from agentcache.cli.lint import report
from agentcache.lint import FORMATS
from agentcache.lint.output import Tool
from agentcache.lint.template import RULES, audit_findings
from agentcache.servers import PROFILES, ServerPrompt
from agentcache.servers.audit import audit_template

TEMPLATE = Tool("agentcache template", {rule.code: rule for rule in RULES})
#: Servers that render a local chat template.
TEMPLATE_SERVERS = ("llama.cpp", "sglang", "vllm")


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "template",
        help="audit a model's chat template: where it breaks the prefix cache, which requests it refuses",
        description=__doc__,
        epilog="Exit codes: 0 no findings, 1 findings, 2 usage or input error. Rules AC4xx: docs/lint.md.",
    )
    parser.add_argument("model_dir", metavar="MODEL_DIR", help="the model folder (tokenizer.json and its template)")
    parser.add_argument(
        "--server",
        choices=[name for name in PROFILES if name in TEMPLATE_SERVERS],
        default="llama.cpp",
        help="whose request shaping to render with (default: llama.cpp)",
    )
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    audit = audit_template(ServerPrompt.from_pretrained(args.model_dir, args.server))
    return report(audit_findings(audit, args.model_dir), args.format, TEMPLATE)
