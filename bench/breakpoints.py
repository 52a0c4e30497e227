"""Breakpoint placement on the same sessions: agentcache.breakpoints against LangChain's
AnthropicPromptCachingMiddleware and LiteLLM's cache_control_injection_points, each placed by its own code.

Run: ``python bench/breakpoints.py``. Every session is replayed through the client-side model of Anthropic's cache
(``AnthropicPromptCache``, claude-opus-4-8's rule, requests 20 s apart) once per placement, and the table prints,
side by side, the share of prompt tokens read from cache and the prompt's cost in input-token equivalents (reads
0.1x, 5-minute writes 1.25x), with the saving against no breakpoint at all, then the totals over all sessions.
Exits 1 when agentcache's placement
costs more than either peer's on some session, or any placement is over the 4-breakpoint budget.

The peers run from pinned releases: LiteLLM from the environment (its version is printed), LangChain's middleware
from ``langchain-anthropic`` (:data:`PEERS`), installed on first use into agentcache's cache folder and imported
from there; agentcache itself imports neither.
"""

from __future__ import annotations

import copy
import importlib
import os
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import workload

from agentcache.breakpoints import markers, place
from agentcache.cache.rules import MAX_BREAKPOINTS
from agentcache.drift import CacheOptions, TraceRecord, explain
from agentcache.drift.trace import Trace

MODEL = "claude-opus-4-8"
PEERS = ["langchain-anthropic==1.7.10"]
"""What the LangChain column runs, pinned; installed beside (not over) the environment's packages."""
EPHEMERAL = {"type": "ephemeral", "ttl": "5m"}
Request = dict[str, Any]


def peer_path() -> Path:
    """Where the pinned peers are installed: agentcache's cache folder, appended to ``sys.path`` so the
    environment's own packages keep precedence."""
    root = Path(os.environ.get("AGENTCACHE_ENGINE_CACHE") or Path.home() / ".cache" / "agentcache") / "bench-peers"
    if not (root / "langchain_anthropic").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(root), *PEERS], check=True)
    if str(root) not in sys.path:
        sys.path.append(str(root))
    return root


def fan_out(calls_per_turn: list[int]) -> list[Request]:
    """An agent that calls tools in parallel: each turn one assistant message with that turn's calls, then their
    results (a code agent reading a module's files at once, a search agent querying many sources)."""
    messages = workload.messages(4)
    for turn, count in enumerate(calls_per_turn):
        calls = [
            {
                "id": f"f{turn}_{i}",
                "type": "function",
                "function": {"name": "read_file_0", "arguments": f'{{"n": {i}}}'},
            }
            for i in range(count)
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [
            {"role": "tool", "tool_call_id": c["id"], "content": f"file {i}: ok\n" * 8} for i, c in enumerate(calls)
        ]
    return messages


def attached(files_per_turn: list[int]) -> list[Request]:
    """A review agent whose user turns attach files, each file a text part of its own (as IDE agents send context
    items): a turn adds one lookback position per file, past Anthropic's 20 when it attaches 20 or more."""
    messages = workload.messages(4)
    for turn, count in enumerate(files_per_turn):
        files = [
            {"type": "text", "text": f"# src/pkg{turn}/m{i}.py\n" + f"def f{i}(x):\n    return x + {i}\n" * 6}
            for i in range(count)
        ]
        messages.append({"role": "user", "content": [{"type": "text", "text": "Review these files."}, *files]})
        messages.append({"role": "assistant", "content": f"Turn {turn}: the files look consistent."})
    return messages


def with_state(requests: list[Request]) -> list[Request]:
    """The same turns with the agent's state (step, open files, plan) appended to the system prompt each turn, as
    agents that keep a scratchpad or a to-do list in their instructions do."""
    out = []
    for step, request in enumerate(requests):
        system = request["messages"][0]
        state = f"\n\n## State\nStep {step}. Open files: {', '.join(f'src/m{j}.py' for j in range(step % 5 + 1))}."
        out.append(
            {**request, "messages": [{**system, "content": system["content"] + state}, *request["messages"][1:]]}
        )
    return out


def sessions() -> dict[str, list[Request]]:
    """Agent sessions in the Chat Completions dialect LiteLLM and agentcache's transport take: a request after each
    user message and each tool result. The first four are plain loops (ties are expected there). Then parallel tool
    calls, of fixed and of varying fan-out: a run of calls, and of results, is one of Anthropic's lookback
    positions, so these stay within its 20 whatever the fan-out. The last two are shapes where where a breakpoint
    goes decides what is read: turns attaching more files (one part each) than the 20-position lookback, and a
    system prompt whose tail changes every turn."""

    def requests(tools: list[Request], messages: list[Request]) -> list[Request]:
        return [
            {"model": MODEL, "max_tokens": 1024, "tools": tools, "messages": messages[:end]}
            for end in range(2, len(messages) + 1)
            if messages[end - 1]["role"] == "user"
            or (messages[end - 1]["role"] == "tool" and end == len(messages))
            or (messages[end - 1]["role"] == "tool" and messages[end]["role"] != "tool")
        ]

    bursty = workload.messages(4)
    for turn in range(6):  # each turn calls 12 tools at once
        calls = [
            {"id": f"c{turn}_{i}", "type": "function", "function": {"name": "read_file_0", "arguments": "{}"}}
            for i in range(12)
        ]
        bursty.append({"role": "assistant", "content": None, "tool_calls": calls})
        bursty += [
            {"role": "tool", "tool_call_id": c["id"], "content": f"line {i}\n" * 20} for i, c in enumerate(calls)
        ]
    marked = copy.deepcopy(workload.messages(30))  # a framework that marks the system prompt and the first question
    for message in marked[:2]:
        message["content"] = [{"type": "text", "text": message["content"], "cache_control": {"type": "ephemeral"}}]
    return {
        "agent loop, 10 tools": requests(workload.tools(10), workload.messages(40)),
        "caller marked 2 blocks": requests(workload.tools(10), marked),
        "large toolset, 50 tools": requests(workload.tools(50), workload.messages(16)),
        "bursty tool calls": requests(workload.tools(10), bursty),
        "parallel fan-out 24/turn": requests(workload.tools(10), fan_out([24] * 6)),
        "fan-out 1-30, mixed": requests(workload.tools(10), fan_out([3, 26, 2, 30, 1, 22, 5, 24])),
        "files attached, 8-30/turn": requests(workload.tools(10), attached([24, 8, 30, 21, 12, 26])),
        "state in system prompt": with_state(requests(workload.tools(10), workload.messages(30))),
    }


def agentcache_placement(requests: list[Request]) -> list[Request]:
    """Each request placed with the previous plan's shape, as the transport does per session."""
    out, shape = [], None
    for request in requests:
        plan = place(request, "anthropic", MODEL, previous=shape)
        out.append(plan.request)
        shape = plan.shape
    return out


def litellm_placement(requests: list[Request]) -> list[Request]:
    """LiteLLM's hook with the injection points its docs recommend for agents: the system message and the latest
    message (index -1)."""
    from litellm.integrations.anthropic_cache_control_hook import AnthropicCacheControlHook

    hook, out = AnthropicCacheControlHook(), []
    points = [{"location": "message", "role": "system"}, {"location": "message", "index": -1}]
    for request in requests:
        params = {"cache_control_injection_points": copy.deepcopy(points), "tools": request["tools"]}
        _, messages, _ = hook.get_chat_completion_prompt(
            f"anthropic/{MODEL}", copy.deepcopy(request["messages"]), params, None, None, {}
        )
        out.append({**request, "messages": messages})
    return out


def langchain_placement(requests: list[Request]) -> list[Request]:
    """AnthropicPromptCachingMiddleware's own tagging of the system message and the last tool, plus the top-level
    ``cache_control`` it passes to ChatAnthropic (automatic caching), as ChatAnthropic puts them on the wire."""
    peer_path()
    caching = importlib.import_module("langchain_anthropic.middleware.prompt_caching")
    from langchain_core.messages import SystemMessage
    from langchain_core.tools import StructuredTool

    out = []
    for request in requests:
        body = copy.deepcopy(request)
        system = body["messages"][0]
        tagged = caching._tag_system_message(SystemMessage(content=system["content"]), EPHEMERAL)
        system["content"] = tagged.content
        tools = [
            StructuredTool(
                name=t["function"]["name"],
                description=t["function"]["description"],
                args_schema=t["function"]["parameters"],
                func=lambda **_: None,
            )
            for t in body["tools"]
        ]
        last = caching._tag_tools(tools, EPHEMERAL)[-1]
        if (last.extras or {}).get("cache_control"):
            body["tools"][-1]["cache_control"] = last.extras["cache_control"]
        out.append({**body, "cache_control": EPHEMERAL})
    return out


def replay(requests: list[Request]) -> tuple[float, float]:
    """(share of prompt tokens read from cache, cost in input-token equivalents) on the client-side model."""
    records = [TraceRecord(i + 1, "s", r, None, 20.0 * i) for i, r in enumerate(requests)]
    reports = explain(Trace(records, []), cache=CacheOptions("anthropic", model=MODEL))
    prompt = sum(r.predicted_prompt_tokens for r in reports)
    return sum(r.predicted_cached for r in reports) / prompt, sum(r.predicted_cost or 0.0 for r in reports)


def main() -> int:
    strategies: dict[str, Callable[[list[Request]], list[Request]]] = {
        "none": lambda requests: requests,
        "agentcache": agentcache_placement,
        "langchain": langchain_placement,
        "litellm": litellm_placement,
    }
    print(f"client-side model: AnthropicPromptCache, {MODEL}; litellm {metadata.version('litellm')}, {PEERS[0]}")
    header = f"{'session':<26}{'placement':<12}{'turns':>6}{'cached':>9}{'cost':>12}{'saving':>9}{'max bp':>8}"
    print(header)
    failed = False
    totals = dict.fromkeys(strategies, 0.0)
    for name, requests in sessions().items():
        costs: dict[str, float] = {}
        for label, strategy in strategies.items():
            placed = strategy(requests)
            most = max(map(markers, placed))  # the top-level automatic marker is a "cache_control" key too
            cached, costs[label] = replay(placed)
            totals[label] += costs[label]
            saving = 1 - costs[label] / costs["none"]
            over = "  over the limit: the API refuses these requests (HTTP 400)" if most > MAX_BREAKPOINTS else ""
            print(
                f"{name:<26}{label:<12}{len(placed):>6}{cached:>9.1%}{costs[label]:>12,.0f}{saving:>9.1%}{most:>8}{over}"
            )
            if over:
                costs[label] = float("inf")  # a refused request caches nothing and answers nothing
            failed |= label == "agentcache" and bool(over)
        failed |= costs["agentcache"] > min(costs["langchain"], costs["litellm"])
    print(f"\n{'all sessions':<26}{'placement':<12}{'cost':>12}{'saving':>9}")
    for label, cost in totals.items():
        print(f"{'':<26}{label:<12}{cost:>12,.0f}{1 - cost / totals['none']:>9.1%}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
