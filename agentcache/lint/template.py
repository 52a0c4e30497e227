"""Chat-template rules (AC4xx): a model's template breaks the prefix by itself, or refuses a request shape.

``agentcache template MODEL_DIR`` reports them at the template's lines (:func:`audit_findings`); ``explain`` with
a model folder finds the same causes turn by turn in a trace, and lint reports them there as trace findings.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from agentcache.lint.core import Finding, LintResult, Rule
from agentcache.predict import causes
from agentcache.servers.audit import Audit, DriftPoint, Refusal, template_file
from agentcache.totals import count

REFUSES = Rule(
    "AC400",
    "template-refuses-request",
    "the chat template refuses a request shape an agent may send (the server answers an error)",
    "send the shape the template accepts (the message says which), or serve a template that accepts it",
)
BY_CAUSE: dict[str, Rule] = {
    causes.TEMPLATE_MOVES_TOOLS: Rule(
        "AC401",
        "template-moves-tools",
        "the chat template renders the tools at a place that moves as the conversation grows",
        "serve a template that renders the tools once at the start (in the system turn), or accept the loss",
    ),
    causes.TEMPLATE_MOVES_SYSTEM: Rule(
        "AC402",
        "template-moves-system",
        "the chat template renders the system prompt into the last user turn, so it moves every turn",
        "serve a template that renders the system prompt first, or accept the loss",
    ),
    causes.TEMPLATE_DROPS_REASONING: Rule(
        "AC403",
        "template-drops-reasoning",
        "the chat template drops the reasoning of earlier assistant turns, rewriting them once a user speaks",
        "serve a template that keeps earlier reasoning (some read a preserve_thinking variable), or accept the "
        "loss at each user turn",
    ),
    causes.TEMPLATE_DATE: Rule(
        "AC404",
        "template-date",
        "the chat template renders today's date, so a session that crosses midnight loses its whole prompt",
        "pass a fixed date (chat_template_kwargs, date_string) or serve a template without it",
    ),
    causes.TEMPLATE_GENERATION_PROMPT: Rule(
        "AC405",
        "template-generation-prompt",
        "the prompt's end (the generation prompt) is not how the template renders that turn afterwards",
        "nothing to do on the agent's side: a few tokens per turn are prefilled again",
    ),
    causes.TEMPLATE_REWRITES: Rule(
        "AC406",
        "template-rewrites-history",
        "the chat template renders earlier messages differently once the conversation grows",
        "look at the template line named: it depends on the position of a message (loop.last, a later message)",
    ),
}
RULES: tuple[Rule, ...] = (REFUSES, *BY_CAUSE.values())


def audit_findings(audit: Audit, model_dir: str | Path) -> LintResult:
    """The audit as lint findings on the template's file: one per cause and template line, one per refusal."""
    path = template_file(model_dir)
    display = str(path)
    embedded = path.suffix == ".json"
    key_line = _key_line(path) if embedded else 1
    findings = []
    groups: dict[tuple[str, int | None], list[DriftPoint]] = defaultdict(list)
    for point in audit.drifts:
        groups[(point.drift.cause, point.drift.line)].append(point)
    for (cause, line), points in groups.items():
        lost = sorted(p.drift.lost for p in points)
        shapes = sorted({p.shape for p in points})
        per_turn = count(lost[0], "token") if lost[0] == lost[-1] else f"{lost[0]:,} to {lost[-1]:,} tokens"
        message = (
            f"{points[0].drift.description()}: breaks the prefix on {count(len(points), 'turn')} of "
            f"{audit.turns} ({', '.join(shapes)}), {per_turn} of the previous prompt prefilled again per turn"
        )
        rule = BY_CAUSE[cause]
        findings.append(_at(display, line, key_line, embedded, rule, message))
    if audit.date is not None:
        message = (
            f"{audit.date.description()}: a session that crosses midnight prefills "
            f"{audit.date.lost:,} tokens again (the whole prompt after the date)"
        )
        findings.append(_at(display, audit.date.line, key_line, embedded, BY_CAUSE[causes.TEMPLATE_DATE], message))
    refused: dict[tuple[str, bool], list[Refusal]] = defaultdict(list)
    for refusal in audit.refusals:
        refused[(refusal.message, refusal.accepted_with_nine_ids)].append(refusal)
    for (error, ids), refusals in refused.items():
        where = ", ".join(f"{r.shape} turn {r.turn}" for r in refusals)
        if ids:
            message = f"refuses tool-call ids such as 'call_1' ({where}: {error}); ids of nine letters and digits pass"
        else:
            message = f"refuses {where}: {error}"
        findings.append(_at(display, None, key_line, embedded, REFUSES, message))
    return LintResult(tuple(sorted(findings, key=Finding.sort_key)), files=1)


def _at(display: str, line: int | None, key_line: int, embedded: bool, rule: Rule, message: str) -> Finding:
    """A finding at the template's line, or at the ``chat_template`` key of a template embedded in JSON."""
    where = key_line if embedded or line is None else line
    return Finding(display, where, 1, rule.code, message, rule.hint)


def _key_line(path: Path) -> int:
    """The line of ``"chat_template"`` in a tokenizer_config.json: where the embedded template starts."""
    try:
        text = path.read_text()
    except OSError:
        return 1
    offset = text.find('"chat_template"')
    return 1 if offset < 0 else text.count("\n", 0, offset) + 1
