"""A real LangGraph agent (create_agent, tools, a checkpointer) on llama-server and SGLang, several turns on one
thread, through both one-line wraps: ``cache_aware(ChatOpenAI(...))`` and ``AgentCacheMiddleware``.

Each turn's numbers must be the engine's own, wherever they are shown: the usage the OpenAI SDK parsed from the
engine's body (``response_metadata["token_usage"]``), ``usage_metadata`` ``cache_read``, agentcache's report on
the AIMessage, the callback handler, and the ledger. With the model folder and the server's output ids, the
predicted cached tokens equal the reported ones on every turn. The drift the test introduces (tools shuffled
between turns, a timestamp in the system prompt) is canonicalized away, or reported with its cause.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict
from itertools import pairwise
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool
from langchain_core.tracers.run_collector import RunCollectorCallbackHandler
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver

from agentcache import CanonicalPolicy
from agentcache.cache.rules import MAX_BREAKPOINTS
from agentcache.errors import InputError
from agentcache.httpx import Ledger, Turn
from agentcache.predict import causes
from agentcache.servers import get_profile
from agentcache.transport.call import Call, TurnListener
from agentcache_langgraph import AgentCacheCallbackHandler, AgentCacheMiddleware, CacheReport, cache_aware
from tests.conftest import EngineInfo

ENGINES = ["llama_server", "sglang"]
TURNS = 4
SYSTEM = "You are a coding agent working in a repository.\nUse the tools; answer briefly."


@tool
def search_docs(query: str, limit: int) -> str:
    """Search the project documentation."""
    return f"{limit} results for {query}"


@tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return f"contents of {path}"


@tool
def run_tests(target: str) -> str:
    """Run the test suite of one target."""
    return f"{target}: passed"


TOOLS: list[BaseTool] = [search_docs, read_file, run_tests]


def _engine(request: pytest.FixtureRequest, fixture: str) -> EngineInfo:
    engine: EngineInfo = request.getfixturevalue(fixture)
    engine.empty_cache()  # the client-side model starts empty: so must the server
    return engine


def _chat(engine: EngineInfo, **fields: Any) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=f"{engine.url}/v1", api_key="sk-test", model=engine.model, temperature=0, max_tokens=4, **fields
    )


def _config(thread: str, handler: AgentCacheCallbackHandler) -> Any:
    return {"configurable": {"thread_id": thread}, "callbacks": [handler]}


def _question(turn: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": f"Step {turn}: look at module {turn} and report."}]}


def _reply(state: dict[str, Any]) -> AIMessage:
    message = state["messages"][-1]
    assert isinstance(message, AIMessage) and not message.tool_calls  # the tiny model never calls a tool
    return message


def _sent_back(message: AIMessage, turn: int) -> dict[str, Any]:
    """The thread's history with fixed text in place of the random model's reply ``message``, for the next turn.

    The model's own text, re-sent, is tokenized again by the server, and llama-server's pre-tokenizer splits some
    strings a random model writes (runs of unusual Unicode) otherwise than tokenizer.json: the prediction would
    then miss by what the two tokenizers disagree on, which is not agentcache's. The server still holds the ids it
    generated; the next prompt diverges from them where this text starts, and the prediction must follow."""
    return {"messages": [AIMessage(content=f"Module {turn} looks fine; moving on.", id=message.id)]}


def _ask(agent: Any, turn: int, config: Any) -> AIMessage:
    """One turn of ``agent`` on the config's thread; its reply kept in the history as :func:`_sent_back` says."""
    message = _reply(agent.invoke(_question(turn), config))
    agent.update_state(config, _sent_back(message, turn))
    return message


async def _aask(agent: Any, turn: int, config: Any) -> AIMessage:
    message = _reply(await agent.ainvoke(_question(turn), config))
    await agent.aupdate_state(config, _sent_back(message, turn))
    return message


def _check_turn(message: AIMessage, turn: Turn, thread: str, number: int) -> CacheReport:
    """Every place the turn is shown holds the engine's figures, and the prediction is exact."""
    report: CacheReport = message.response_metadata["agentcache"]
    engine_usage = message.response_metadata["token_usage"]  # the body's usage as the OpenAI SDK parsed it
    assert message.usage_metadata is not None
    assert report["session"] == turn.session == thread and report["turn"] == turn.turn == number
    assert report["prompt_tokens"] == turn.reported_prompt_tokens == engine_usage["prompt_tokens"]
    assert report["prompt_tokens"] == message.usage_metadata["input_tokens"]
    cached = engine_usage["prompt_tokens_details"]["cached_tokens"]
    assert report["cached_tokens"] == turn.reported_cached == cached
    assert message.usage_metadata["input_token_details"]["cache_read"] == cached
    assert report["hit_ratio"] == pytest.approx(cached / engine_usage["prompt_tokens"])
    assert report["exact"] and turn.output_ids_known and turn.status == 200
    assert report["predicted_cached"] == cached, report
    assert turn.predicted_prompt_tokens == turn.reported_prompt_tokens
    assert (report["cause"], report["divergence_token"]) == (turn.cause, turn.divergence_token)
    return report


def _check_handler(handler: AgentCacheCallbackHandler, thread: str, messages: Sequence[AIMessage]) -> None:
    runs = handler.reports(thread)
    assert [r.agentcache for r in runs] == [m.response_metadata["agentcache"] for m in messages]
    assert [r.cache_read for r in runs] == [m.response_metadata["token_usage"]["prompt_tokens_details"][
        "cached_tokens"] for m in messages]
    table = handler.table(thread).splitlines()
    assert len(table) == 1 + len(messages) and table[0].split()[:4] == ["thread", "turn", "prompt", "cached"]


def _check_summary(ledger: Ledger, thread: str, reports: Sequence[CacheReport]) -> None:
    summary = ledger.summary(thread)
    assert summary.turns == len(reports)
    assert summary.reported_prompt_tokens == sum(r["prompt_tokens"] or 0 for r in reports)
    assert summary.reported_cached == summary.predicted_cached == sum(r["cached_tokens"] or 0 for r in reports)
    assert summary.hit_ratio == pytest.approx(summary.reported_cached / summary.reported_prompt_tokens)
    expected: dict[str, int] = {}
    for report in reports:
        cause = report["cause"] or "-"
        expected[cause] = expected.get(cause, 0) + 1
    assert summary.causes == expected


def _shuffled_tools_session(
    engine: EngineInfo, thread: str, canonicalize: bool
) -> tuple[list[AIMessage], list[Turn], AgentCacheCallbackHandler, Ledger]:
    """TURNS turns on one thread; the agent is rebuilt each turn with its tools in another order."""
    engine.empty_cache()
    # Sent as they are, requests get no field added: the agent asks for the output ids itself.
    extra = {} if canonicalize else {"extra_body": get_profile(engine.profile).output_ids_request}
    model = cache_aware(
        _chat(engine, **extra), server=engine.profile, model_dir=engine.model_dir, ask_output_ids=True,
        canonicalize=canonicalize,
    )
    assert isinstance(model, ChatOpenAI) and model.get_name() == "ChatOpenAI"  # the same model, to the user
    saver, handler, messages = InMemorySaver(), AgentCacheCallbackHandler(), []
    for turn in range(TURNS):
        tools = TOOLS[turn % 3:] + TOOLS[: turn % 3]
        agent = create_agent(model, tools, system_prompt=SYSTEM, checkpointer=saver)
        messages.append(_ask(agent, turn, _config(thread, handler)))
    return messages, model.ledger.turns(thread), handler, model.ledger


@pytest.mark.parametrize("fixture", ENGINES)
def test_shuffled_tools_are_canonicalized_away_and_every_figure_is_the_engines(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    engine = _engine(request, fixture)
    raw, raw_turns, _, _ = _shuffled_tools_session(engine, "raw", canonicalize=False)
    messages, turns, handler, ledger = _shuffled_tools_session(engine, "tools", canonicalize=True)

    reports = [_check_turn(m, t, "tools", i + 1) for i, (m, t) in enumerate(zip(messages, turns, strict=True))]
    assert reports[0]["cause"] == causes.NEW_SESSION
    for before, after in pairwise(reports):
        # The whole previous prompt is reused, whatever order the agent listed its tools in.
        assert after["cause"] == causes.NONE and after["divergence_token"] is None
        assert (after["cached_tokens"] or 0) >= (before["prompt_tokens"] or 0) > 0
    _check_handler(handler, "tools", messages)
    _check_summary(ledger, "tools", reports)

    # The control: the same turns sent as the agent built them lose the prefix at the tools, and say so.
    raw_reports = [_check_turn(m, t, "raw", i + 1) for i, (m, t) in enumerate(zip(raw, raw_turns, strict=True))]
    for before, after in pairwise(raw_reports):
        assert after["cause"] == causes.TOOL_ORDER and after["divergence_token"] is not None
        assert (after["cached_tokens"] or 0) < (before["prompt_tokens"] or 0)
    assert sum(r["cached_tokens"] or 0 for r in raw_reports) < sum(r["cached_tokens"] or 0 for r in reports)


def _timestamped(turn: int) -> str:
    return f"You are a coding agent working in a repository.\nCurrent time: 2026-11-30T09:{10 + turn:02d}:05Z\n" \
        "Use the tools; answer briefly."


def _clock_session(engine: EngineInfo, thread: str, relocate: bool) -> list[CacheReport]:
    """TURNS turns through the middleware, the system prompt stamped with a new time each turn."""
    engine.empty_cache()
    middleware = AgentCacheMiddleware(
        server=engine.profile, model_dir=engine.model_dir, ask_output_ids=True,
        policy=CanonicalPolicy(relocate_volatile=relocate),
    )
    saver, handler, messages = InMemorySaver(), AgentCacheCallbackHandler(), []
    for turn in range(TURNS):
        agent = create_agent(
            _chat(engine), TOOLS, system_prompt=_timestamped(turn), middleware=[middleware], checkpointer=saver
        )
        messages.append(_ask(agent, turn, _config(thread, handler)))
    turns = middleware.ledger.turns(thread)
    reports = [_check_turn(m, t, thread, i + 1) for i, (m, t) in enumerate(zip(messages, turns, strict=True))]
    _check_handler(handler, thread, messages)
    _check_summary(middleware.ledger, thread, reports)
    assert reports[0]["cause"] == causes.NEW_SESSION
    if relocate:  # later turns keep each turn's relocated clock where it was sent: the system prompt is the same
        # bytes every turn, so no turn's first difference is in it (one in the history is the model's or LangGraph's)
        assert all(t.divergence is None or t.divergence.part == "messages" for t in turns[1:]), turns
    else:  # the first difference is the system prompt's clock, before anything the model wrote
        assert all(r["cause"] == causes.VOLATILE_VALUE and r["divergence_token"] is not None for r in reports[1:])
    return reports


@pytest.mark.parametrize("fixture", ENGINES)
def test_a_timestamp_in_the_system_prompt_is_reported_as_volatile_value_and_relocation_recovers_the_prefix(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    engine = _engine(request, fixture)
    stamped = _clock_session(engine, "clock", relocate=False)
    # Each turn breaks at the same place, inside the system prompt: the server reuses at most what precedes it.
    assert len({r["divergence_token"] for r in stamped[1:]}) == 1
    for report in stamped[1:]:
        assert (report["cached_tokens"] or 0) <= (report["divergence_token"] or 0) < (stamped[0]["prompt_tokens"] or 0)

    relocated = _clock_session(engine, "clock-relocated", relocate=True)
    # The timestamp moved to a trailing message, kept there by later turns: each turn reuses the previous prompt.
    for before, after in pairwise(relocated):
        assert (after["cached_tokens"] or 0) > (before["cached_tokens"] or 0)
    assert sum(r["cached_tokens"] or 0 for r in stamped) < sum(r["cached_tokens"] or 0 for r in relocated)


@pytest.mark.parametrize("fixture", ENGINES)
def test_ainvoke_turns_are_reported_like_invoke_ones_and_share_the_cache_model(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    """Sync and async clients of one model share one client-side cache model: mixing them keeps predictions exact."""
    engine = _engine(request, fixture)
    middleware = AgentCacheMiddleware(server=engine.profile, model_dir=engine.model_dir, ask_output_ids=True)
    handler = AgentCacheCallbackHandler()
    agent = create_agent(
        _chat(engine), TOOLS, system_prompt=SYSTEM, middleware=[middleware], checkpointer=InMemorySaver()
    )

    async def turns() -> list[AIMessage]:
        return [await _aask(agent, turn, _config("async", handler)) for turn in range(TURNS - 1)]

    messages = asyncio.run(turns())
    messages.append(_ask(agent, TURNS, _config("async", handler)))
    reports = [
        _check_turn(m, t, "async", i + 1)
        for i, (m, t) in enumerate(zip(messages, middleware.ledger.turns("async"), strict=True))
    ]
    assert [r["cause"] for r in reports] == [causes.NEW_SESSION] + [causes.NONE] * (TURNS - 1)
    assert all((b["cached_tokens"] or 0) >= (a["prompt_tokens"] or 0) for a, b in pairwise(reports))
    _check_handler(handler, "async", messages)


def test_a_streamed_model_call_carries_its_report_in_the_merged_message(llama_server: EngineInfo) -> None:
    """``model.stream()`` outside a graph: the report arrives in a last chunk, ``cache_read`` is the engine's."""
    llama_server.empty_cache()
    model = cache_aware(_chat(llama_server), server=llama_server.profile, model_dir=llama_server.model_dir)
    prompt = "Be brief. " * 30

    async def astream() -> AIMessage:
        chunks = [chunk async for chunk in model.astream(prompt)]
        merged = chunks[0]
        for chunk in chunks[1:]:
            merged = merged + chunk
        return AIMessage(**merged.model_dump(exclude={"type", "tool_call_chunks", "chunk_position"}))

    first = model.invoke(prompt)  # the same prompt, streamed after: served from cache
    chunks = list(model.stream(prompt))
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    streamed = [merged, asyncio.run(astream())]
    turns = model.ledger.turns()
    assert [t.stream for t in turns] == [False, True, True]
    for message, turn in zip([first, *streamed], turns, strict=True):
        report: CacheReport = message.response_metadata["agentcache"]
        assert message.usage_metadata is not None
        assert report["cached_tokens"] == turn.reported_cached == message.usage_metadata["input_token_details"][
            "cache_read"]
        assert report["prompt_tokens"] == turn.reported_prompt_tokens == message.usage_metadata["input_tokens"]
    for turn in turns[1:]:  # the whole prompt but its last token came from cache, as predicted
        assert turn.reported_cached == turn.predicted_cached == (turn.reported_prompt_tokens or 0) - 1


def test_a_plain_model_still_reports_the_servers_cache_read_to_the_handler(llama_server: EngineInfo) -> None:
    """The handler works on any graph: without agentcache, it reports what LangChain read from the engine."""
    handler = AgentCacheCallbackHandler()
    agent = create_agent(_chat(llama_server), TOOLS, system_prompt=SYSTEM, checkpointer=InMemorySaver())
    messages = [_reply(agent.invoke(_question(turn), _config("plain", handler))) for turn in range(2)]
    runs = handler.reports("plain")
    assert [r.agentcache for r in runs] == [None, None]
    for run, message in zip(runs, messages, strict=True):
        usage = message.response_metadata["token_usage"]
        assert (run.prompt_tokens, run.cache_read) == (usage["prompt_tokens"], usage["prompt_tokens_details"][
            "cached_tokens"])
    assert "agentcache" not in messages[-1].response_metadata


class _NoHttpClient(BaseChatModel):
    """A chat model with no httpx client to put a transport under (no engine is called)."""

    @property
    def _llm_type(self) -> str:
        return "no-http-client"

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("never called")


def test_models_agentcache_cannot_send_through_are_refused_with_what_to_do() -> None:
    with pytest.raises(TypeError, match="http_client"):
        cache_aware(_NoHttpClient(), server="sglang")
    own = ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test", http_client=httpx.Client())
    with pytest.raises(InputError, match="transport="):
        cache_aware(own, server="sglang")
    # Wrapping again replaces agentcache's own clients (a new ledger), and leaves the original alone.
    plain = ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="sk-test", max_tokens=3)
    once = cache_aware(plain, server="sglang")
    twice = cache_aware(once, server="vllm")
    assert type(once) is type(twice) and once.ledger is not twice.ledger
    assert plain.http_client is None and type(plain) is ChatOpenAI
    assert (twice.max_tokens, twice.openai_api_base) == (3, "http://127.0.0.1:9/v1")


def test_no_credential_reaches_the_report_the_run_metadata_or_the_handler() -> None:
    """A thread id or a passthrough reason can quote a credential (a URL with its password and key, a password
    number the body could not carry): the report on the message, in the run's metadata (what LangSmith receives)
    and in the callback handler is redacted as a ledger export is."""
    password, key = "hunter2hunter2", "abcd1234efgh5678"
    thread = f"https://agent:{password}@example.com/threads/7?api_key={key}"
    completion = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Ok"}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10},
    }
    engine = httpx.MockTransport(lambda request: httpx.Response(200, json=completion))
    chat = cache_aware(
        ChatOpenAI(base_url="http://engine/v1", api_key="sk-test", model="m", max_tokens=2), transport=engine
    )
    handler, runs = AgentCacheCallbackHandler(), RunCollectorCallbackHandler()
    config: Any = {"metadata": {"thread_id": thread}, "callbacks": [handler, runs]}
    message = chat.invoke("hi", config)
    report = message.response_metadata["agentcache"]
    (run,) = runs.traced_runs
    shown = repr((report, run.metadata["agentcache"], handler.reports(), handler.table()))
    assert password not in shown and key not in shown
    assert report["session"] == chat.ledger.turns()[0].to_json()["session"]


class _Bodies(TurnListener):
    """The body of each request as it went out."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def on_begin(self, call: Call) -> None:
        assert call.sent is not None
        self.sent.append(call.sent)


def test_the_middleware_places_breakpoints_with_the_transports_placement(llama_server: EngineInfo) -> None:
    """``AgentCacheMiddleware(breakpoints=True)`` on a GPT-5.6 agent: the transport's placement puts OpenAI's explicit
    breakpoint on the long system prompt of every model call, within the budget with the implicit one counted; the
    engine answers each, and the report on the message carries the turn's account."""
    llama_server.empty_cache()
    bodies = _Bodies()
    middleware = AgentCacheMiddleware(server="openai", breakpoints=True, listeners=[bodies])
    system = SYSTEM + "\n" + " ".join(f"Rule {i}: read the file before editing it." for i in range(200))
    chat = ChatOpenAI(base_url=f"{llama_server.url}/v1", api_key="sk-test", model="gpt-5.6", max_tokens=4)
    agent = create_agent(chat, TOOLS, system_prompt=system, middleware=[middleware], checkpointer=InMemorySaver())
    handler = AgentCacheCallbackHandler()
    messages = [_ask(agent, turn, _config("placed", handler)) for turn in range(TURNS - 1)]
    turns = middleware.ledger.turns("placed")
    assert len(turns) == len(messages) == len(bodies.sent)
    for message, turn, body in zip(messages, turns, bodies.sent, strict=True):
        account = turn.breakpoints
        assert turn.status == 200 and account is not None and account.refused is None
        assert message.response_metadata["agentcache"]["breakpoints"] == asdict(account)
        assert [p.path for p in account.placed] == ["$.messages[0]"]
        assert account.existing == 1 and account.total <= MAX_BREAKPOINTS  # GPT-5.6's implicit one, counted
        assert body["messages"][0]["content"][-1]["prompt_cache_breakpoint"] == {"mode": "explicit"}
