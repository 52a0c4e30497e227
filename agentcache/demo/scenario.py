"""A typical coding agent's session, built deterministically.

Turn 1 sends a 2,000-token system prompt, 1,500 tokens of tool definitions and 6,000 tokens of repository
context; every later turn adds an assistant tool call and about 500 tokens of tool output. With ``drift`` the
session breaks the prefix the way real agents do: the tools come from a set (their order changes between
turns), their schemas' keys come in varying order, and the system prompt carries the current time.
"""

from __future__ import annotations

import random
from typing import Any

from agentcache.tokens import Tokenizer

_RULES = [
    "Read the relevant files before you change anything, and keep each change as small as the task allows.",
    "Run the tests that cover the code you touched; if none exist, write one that fails before your fix.",
    "Never invent an API: search the repository or its dependencies' sources for the real signature first.",
    "When a command fails, read its whole output and explain the cause before you try anything else.",
    "Prefer the project's existing helpers over new ones, and follow the style of the surrounding code.",
    "Keep secrets out of logs, commits and messages, even when a tool prints them back to you.",
    "Ask the user before deleting files, rewriting history, or changing public interfaces.",
    "Summarize what you changed and why at the end of each task, with the commands you ran.",
    "Treat warnings from the type checker and the linter as errors unless the user says otherwise.",
    "If the task is ambiguous, state the interpretation you chose and why it fits the user's words.",
]
_TASKS = [
    "The checkout total is wrong for EUR carts. Find and fix it.",
    "Refunds of discounted orders come out one cent short. Find out why and fix it.",
    "Add a tax line to invoices for customers outside the EU, with a test.",
    "The ledger export crashes on orders without a currency. Make it skip them and log a warning.",
    "Prices in the cart page round differently from the invoice. Make them agree.",
]
_WORDS = ["cart", "order", "invoice", "price", "currency", "discount", "customer", "ledger", "refund", "tax"]


def fill(tokenizer: Tokenizer, target: int, pieces: list[str], joiner: str = "\n") -> str:
    """Join pieces (cycling, ``#`` numbered) until the text holds about ``target`` tokens."""
    out: list[str] = []
    total = 0
    while total < target:
        piece = pieces[len(out) % len(pieces)].replace("#", str(len(out)))
        total += tokenizer.count(piece + joiner)
        out.append(piece)
    return joiner.join(out)


def system_prompt(tokenizer: Tokenizer, now: str, scale: float = 1.0) -> str:
    rules = [f"{i % len(_RULES) + 1}. {rule} (#)" for i, rule in enumerate(_RULES)]
    body = fill(tokenizer, round(1950 * scale), rules)
    return f"You are Forge, a coding agent working in the shop-backend repository.\nCurrent time: {now}\n{body}"


def _tool(name: str, summary: str, params: dict[str, tuple[str, str]], rng: random.Random | None) -> dict[str, Any]:
    properties = {}
    for pname, (ptype, description) in params.items():
        prop = {"type": ptype, "description": description}
        if rng is not None:  # a schema assembled from dicts merged in varying order
            items = list(prop.items())
            rng.shuffle(items)
            prop = dict(items)
        properties[pname] = prop
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "required": list(params)[:1]}
    function: dict[str, Any] = {"name": name, "description": summary, "parameters": parameters}
    if rng is not None:
        items = list(function.items())
        rng.shuffle(items)
        function = dict(items)
    return {"type": "function", "function": function}


_TOOLS = [
    (
        "read_file",
        "Read a file of the repository, optionally a range of lines.",
        {
            "path": ("string", "Path relative to the repository root."),
            "start": ("integer", "First line, 1-based."),
            "end": ("integer", "Last line, inclusive."),
        },
    ),
    (
        "write_file",
        "Replace the whole content of a file, creating it if needed.",
        {"path": ("string", "Path relative to the repository root."), "content": ("string", "The new content.")},
    ),
    (
        "edit_file",
        "Replace one exact snippet of a file with another; fails if the snippet is not unique.",
        {
            "path": ("string", "Path of the file."),
            "old": ("string", "Exact text to replace."),
            "new": ("string", "Replacement text."),
        },
    ),
    (
        "run_tests",
        "Run the test suite or a subset of it and return the report.",
        {
            "target": ("string", "A test file, directory or node id."),
            "verbose": ("boolean", "Print each test."),
            "timeout": ("integer", "Seconds before the run is stopped."),
        },
    ),
    (
        "search_code",
        "Search the repository with a regular expression and return matching lines.",
        {
            "pattern": ("string", "A Python regular expression."),
            "glob": ("string", "Only files matching this glob."),
            "max_results": ("integer", "Stop after this many matches."),
        },
    ),
    (
        "run_shell",
        "Run a shell command in the repository and return its output and exit code.",
        {
            "command": ("string", "The command line."),
            "cwd": ("string", "Working directory, relative to the root."),
            "timeout": ("integer", "Seconds before the command is killed."),
        },
    ),
    (
        "git_diff",
        "Show the diff of the working tree against a revision.",
        {"revision": ("string", "A revision, HEAD by default."), "paths": ("string", "Limit to these paths.")},
    ),
    (
        "list_dir",
        "List a directory of the repository with file sizes.",
        {"path": ("string", "Directory relative to the root."), "depth": ("integer", "How deep to recurse.")},
    ),
]


def tools(tokenizer: Tokenizer, turn: int, drift: bool, scale: float = 1.0) -> list[dict[str, Any]]:
    """The tool definitions, padded with usage notes to about 1,500 tokens.

    With drift, the order changes at turns 4 and 8 (the agent's worker restarted and iterated its tool set in a
    new hash order) and the schemas' key order at turns 5 and 10 (tools rebuilt from merged dicts)."""
    bare = sum(tokenizer.count(str(_tool(name, summary, params, None))) for name, summary, params in _TOOLS)
    room = max(0, round(1500 * scale) - bare) // len(_TOOLS)
    notes = fill(tokenizer, room, [f"Note #: {rule}" for rule in _RULES], " ")
    keys = random.Random(100 + (turn + 1) // 5) if drift else None
    out = [_tool(name, f"{summary} {notes}", params, keys) for name, summary, params in _TOOLS]
    if drift:
        random.Random((turn + 1) // 4).shuffle(out)
    return out


def repository_context(tokenizer: Tokenizer, scale: float = 1.0) -> str:
    module = [
        f'def {word}_total_#(items, rate):\n    """Sum the {word} lines and apply the rate."""\n'
        f"    return round(sum(item.amount for item in items) * rate, 2)\n"
        for word in _WORDS
    ]
    return "Repository map and the files you will need:\n" + fill(tokenizer, round(6000 * scale), module)


def tool_output(tokenizer: Tokenizer, turn: int, scale: float = 1.0) -> str:
    lines = [
        f"tests/test_{_WORDS[turn % len(_WORDS)]}.py::test_case_# PASSED [#%]",
        "E   KeyError: 'currency'",
        f"src/shop/{_WORDS[(turn + 3) % len(_WORDS)]}.py:# in total  -> value = row['currency']",
    ]
    return fill(tokenizer, round(500 * scale), lines)


def session(
    tokenizer: Tokenizer, turns: int = 10, drift: bool = True, scale: float = 1.0, index: int = 0
) -> list[dict[str, Any]]:
    """The requests of one session, turn by turn; ``scale`` multiplies every part's size (a small server's
    context holds the session at 0.1). ``index`` picks one of many sessions of the same deployment: its own task
    and, with drift, its own clock; the system prompt, tools and repository map are the deployment's."""
    context = repository_context(tokenizer, scale)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": context + "\n\n" + _TASKS[index % len(_TASKS)]}
    ]
    requests = []
    for turn in range(turns):
        clock = f"T{10 + index % 14:02d}:{turn * 3:02d}:{(turn * 17 + index) % 60:02d}Z"
        now = f"2026-11-30{clock}" if drift else "2026-11-30"
        system = {"role": "system", "content": system_prompt(tokenizer, now, scale)}
        requests.append(
            {
                "model": "forge-coder",
                "temperature": 0.0,
                "tools": tools(tokenizer, turn, drift, scale),
                "messages": [system, *history],
            }
        )
        call_id = f"call_{turn}"
        args = {"target": f"tests/test_{_WORDS[turn % len(_WORDS)]}.py", "verbose": True}
        arguments = ", ".join(
            f'"{k}": {str(v).lower() if isinstance(v, bool) else repr(v)}'
            for k, v in (reversed(args.items()) if drift and turn % 2 else args.items())
        )
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "run_tests", "arguments": "{" + arguments.replace("'", '"') + "}"},
                    }
                ],
            }
        )
        history.append({"role": "tool", "tool_call_id": call_id, "content": tool_output(tokenizer, turn, scale)})
    return requests
