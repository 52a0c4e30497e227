"""A LangGraph agent on a local llama-server, made cache-aware by one line, printing its per-turn cache table.

    python examples/langgraph_agent.py                                # installs and starts llama-server itself
    python examples/langgraph_agent.py --url http://127.0.0.1:PORT    # an engine engines.py already started

It uses the project's engine script (``scripts/engines/engines.py``) and the tiny test model it builds, so the
replies are gibberish; what matters is the table. The system prompt carries the current time, as many agents'
do: agentcache moves that line to the end of the request, so each turn still reuses the stable prefix, and the
table says why a turn missed the rest (``volatile_value``). Needs ``pip install -e ".[langgraph,hf]"``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, dynamic_prompt
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from local_engine import MODEL, main

from agentcache import CanonicalPolicy
from agentcache_langgraph import AgentCacheCallbackHandler, AgentCacheMiddleware

QUESTIONS = [
    "Which module parses the configuration?",
    "Read that file and summarize it.",
    "Run its tests.",
    "Open an issue for the failure.",
]


@tool
def search_code(query: str) -> str:
    """Search the repository for code matching a query."""
    return f"src/config.py matches {query!r}"


@tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"# {path}\n..."


@tool
def run_tests(path: str) -> str:
    """Run the tests of one file."""
    return f"{path}: 1 failed"


@dynamic_prompt
def system_prompt(request: ModelRequest) -> str:
    now = datetime.now(timezone.utc).isoformat(timespec="microseconds")
    return f"You are a coding agent working in a repository.\nCurrent time: {now}\nUse the tools; answer briefly."


def run(url: str, model_dir: Path) -> None:
    # The one line: the agent's model now sends canonical requests and reports each turn's cache hits.
    cache = AgentCacheMiddleware(
        server="llama.cpp", model_dir=model_dir, ask_output_ids=True, policy=CanonicalPolicy(relocate_volatile=True)
    )
    model = ChatOpenAI(base_url=f"{url}/v1", api_key="-", model=MODEL, temperature=0, max_tokens=8)
    agent = create_agent(
        model, [search_code, read_file, run_tests], middleware=[system_prompt, cache], checkpointer=InMemorySaver()
    )
    handler = AgentCacheCallbackHandler()
    config: RunnableConfig = {"configurable": {"thread_id": "demo"}, "callbacks": [handler]}
    for question in QUESTIONS:
        reply = agent.invoke({"messages": [{"role": "user", "content": question}]}, config)["messages"][-1]
        print(f"> {question}\n  {reply.content!r}")
    print()
    print(handler.table())
    summary = cache.ledger.summary("demo")
    print(
        f"\nthread demo: {summary.turns} turns, "
        f"{summary.reported_cached} of {summary.reported_prompt_tokens} prompt tokens "
        f"from cache ({summary.hit_ratio or 0:.0%}), {summary.predicted_cached} predicted; causes {summary.causes}"
    )


if __name__ == "__main__":
    main(run, __doc__)
