"""A CrewAI crew on a local llama-server, made cache-aware by one line, printing its per-call cache table.

    python examples/crewai_crew.py                                # installs and starts llama-server itself
    python examples/crewai_crew.py --url http://127.0.0.1:PORT    # an engine engines.py already started

It uses the project's engine script (``scripts/engines/engines.py``) and the tiny test model it builds, so the
replies are gibberish; what matters is the table. The task's guardrail sends the first two answers back, so the
one task makes three LLM calls: each repeats the agent's prompt and adds crewai's retry note to the task
message, which the table reports as the cause of what the server could not reuse. Each call's report is also
printed as it arrives on crewai's event bus. Needs ``pip install -e ".[crewai,hf]"``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.update(  # a local example: no crewai telemetry, trace upload or version check, unless asked for
    {
        name: os.environ.get(name, value)
        for name, value in [
            ("CREWAI_DISABLE_TELEMETRY", "true"),
            ("CREWAI_TRACING_ENABLED", "false"),
            ("CREWAI_DISABLE_VERSION_CHECK", "true"),
        ]
    }
)

from crewai import LLM, Agent, Crew, Task
from crewai.events import crewai_event_bus
from crewai.lite_agent_output import LiteAgentOutput
from crewai.tasks.task_output import TaskOutput
from crewai.tools import tool
from local_engine import MODEL, main

from agentcache_crewai import CacheInterceptor, LLMCacheReportEvent

REJECTIONS = 2


@tool("search_code")
def search_code(query: str) -> str:
    """Search the repository for code matching a query."""
    return f"src/config.py matches {query!r}"


@tool("read_file")
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"# {path}\n..."


def on_report(source: object, event: LLMCacheReportEvent) -> None:
    report = event.report
    print(
        f"[event bus] {report.agent_role}: {report.cached_tokens} of {report.prompt_tokens} prompt tokens cached, "
        f"{report.predicted_cached} predicted, cause {report.cause}"
    )


def run(url: str, model_dir: Path) -> None:
    with CacheInterceptor(server="llama.cpp", model_dir=model_dir, ask_output_ids=True) as cache:
        # The one line: the LLM now sends canonical requests, and each call's cache hits are reported.
        llm = LLM(model=f"openai/{MODEL}", base_url=f"{url}/v1", api_key="-", temperature=0, max_tokens=8,
                  interceptor=cache)
        crewai_event_bus.on(LLMCacheReportEvent)(on_report)
        answers: list[str] = []

        # no return annotation: crewai checks it at run time, and with postponed annotations it is a string it refuses
        def guardrail(output: TaskOutput | LiteAgentOutput):  # type: ignore[no-untyped-def]
            answers.append(output.raw)
            if len(answers) > REJECTIONS:
                return True, output.raw
            return False, "Name the file and the function."

        agent = Agent(role="Code reviewer", goal="Find where the configuration is parsed",
                      backstory="You review Python repositories.", llm=llm, tools=[search_code, read_file], max_iter=2)
        task = Task(description="Find the module that parses the configuration.", expected_output="A file path",
                    agent=agent, guardrail=guardrail, guardrail_max_retries=REJECTIONS)
        crew = Crew(agents=[agent], tasks=[task])
        result = crew.kickoff()
        print(f"\nanswer: {str(result)!r}\n")
        report = cache.last_run(crew)
        crewai_event_bus.off(LLMCacheReportEvent, on_report)
    if report is None:
        sys.exit("no LLM call went through the interceptor")
    print(report.table())
    print(
        f"\n{len(report.calls)} calls: {report.cached_tokens} of {report.prompt_tokens} prompt tokens from cache "
        f"({report.hit_ratio or 0:.0%}), {report.predicted_cached} predicted; causes {report.causes}"
    )


if __name__ == "__main__":
    main(run, __doc__)
