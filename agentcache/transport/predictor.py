"""The prediction of a turn, as data in and data out, so that it can run in another process.

A :class:`Predictor` is one middleware's model of the server's cache (a
:class:`~agentcache.predict.replay.Replay`), built from a :class:`PredictorSpec`; a :class:`PredictJob` is what
one turn needs from the caller: the canonical body as the bytes sent, the session, the server's usage and output.
The background worker runs the jobs in this process, or sends them to the prediction process
(:mod:`agentcache.transport.background`), which builds its own predictor from the same spec.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from agentcache.cache.options import CacheOptions
from agentcache.errors import AgentCacheError
from agentcache.predict.prompt import PromptTokenizer
from agentcache.predict.replay import Prediction, Replay
from agentcache.servers import ServerProfile, ServerPrompt
from agentcache.servers.kv_events import KEEPS_COPIES, PUBLISHES_BEFORE_ANSWER, Held, KvEventStream
from agentcache.tokens import Tokenizer, get_tokenizer
from agentcache.transport.cluster import retyped

#: Distinct tool lists a predictor shares between bodies before it starts over (agents send a handful).
MAX_TOOL_LISTS = 64


class PredictJob(NamedTuple):
    """One turn to predict: bytes and numbers, cheap to send to another process (a parsed body is not)."""

    sent: bytes
    """The body as sent: the canonical bytes ``begin`` built, or the agent's own."""
    started: float
    session: str
    output_ids: list[int] | None
    """The token ids the server generated, when it returned them."""
    text: str
    """The output text, tokenized with the server's tokenizer when the ids are not known."""
    reported_prompt_tokens: int | None
    reported_cached: int | None
    relocated: str | None
    worker: str | None = None
    """The cluster's worker that served the turn (None: a single server)."""
    lost: tuple[str, ...] = ()
    """The cluster's workers found gone since the last job: their caches are dropped before the turn is served."""
    sent_at: float = 0.0
    """``time.monotonic()`` when the request went out: its own first store in the server's KV events is the
    first on its path to arrive after that."""
    answered_at: float | None = None
    """``time.monotonic()`` when its answer had come: a server that publishes its events before it answers has
    published all it did for the request by then."""


@dataclass(frozen=True)
class PredictorSpec:
    """What the prediction process builds a middleware's predictor from: names and paths, never objects.

    A tokenizer or server prompt given as an object has no spec (it stays in the caller's process): sending it
    would mean pickling it, and unpickling imports the module that defined it, which may be the agent's own."""

    options: CacheOptions
    tokenizer: str
    prompt_dir: str | None
    """The model folder the server's chat template and tokenizer are loaded from, when they are known."""
    prompt_server: ServerProfile | str
    kv_events: tuple[tuple[str, str], ...] = ()
    """``(worker, endpoint)`` of each server whose KV events keep its model in step ("" for a single server)."""
    retyped: bool = False
    """Whether the gateway forwards its own serialization of each body (``Cluster.retypes``): the turns are predicted
    from the body as it writes it (:func:`~agentcache.transport.cluster.retyped`)."""

    def build(self, prompts: dict[tuple[str, str], ServerPrompt]) -> Predictor:
        """The predictor; a server prompt already loaded from the same folder for the same server is reused
        from ``prompts`` (loading one takes a second of CPU, and a prompt holds no state)."""
        prompt = None
        if self.prompt_dir is not None:
            key = (self.prompt_dir, repr(self.prompt_server))
            prompt = prompts.get(key)
            if prompt is None:
                prompt = prompts[key] = ServerPrompt.from_pretrained(self.prompt_dir, self.prompt_server)
        return Predictor(self.options, get_tokenizer(self.tokenizer), prompt, dict(self.kv_events), self.retyped)


def prompt_source(
    model_dir: str | Path | None, profile: ServerProfile, options: CacheOptions
) -> tuple[str, ServerProfile | str] | None:
    """Where the server's prompt is loaded from, and for which server: ``model_dir``, else the cache options'
    own folder when that server renders a chat template; None when neither is known."""
    if model_dir is not None:
        return str(model_dir), profile
    if options.model_dir is not None and options.renders_template:
        return options.model_dir, options.kind
    return None


class Predictor:
    """One middleware's model of the server's cache, fed one turn at a time in the order the server saw them.

    ``kv_events`` maps a worker (``""``: the single server) to the endpoint of its KV cache events
    (:mod:`agentcache.servers.kv_events`); the streams subscribe as the predictor is built. Before a turn on that
    server is served, the model drops what the server evicted before matching it: the removals published before
    the turn's own first store (the server stores a request's tokens right after matching its prefix). ``retyped``:
    the gateway forwards its own serialization of each body (:func:`~agentcache.transport.cluster.retyped`), which
    is what the worker renders."""

    def __init__(
        self,
        options: CacheOptions,
        encoder: Tokenizer,
        prompt: ServerPrompt | None,
        kv_events: Mapping[str, str] | None = None,
        retyped: bool = False,
    ) -> None:
        self.prompt = prompt
        self.retyped = retyped
        self.replay = Replay(options, PromptTokenizer(encoder), server_prompt=prompt)
        self._tools: dict[bytes, Any] = {}
        copies = options.kind in KEEPS_COPIES
        events = (kv_events or {}).items()
        self.streams = {worker: KvEventStream(endpoint, copies=copies).start() for worker, endpoint in events}

    def close(self) -> None:
        """Stop reading the servers' events: a stream left open reads and applies every event for as long as the
        process lives, however long ago its middleware was dropped."""
        for stream in self.streams.values():
            stream.close(wait=0)

    def _parse(self, sent: bytes) -> dict[str, Any]:
        """The body, its tool list shared with every earlier body that sent the same one. The replay keeps each
        session's last request; 64 sessions' own copies of the same 20 rich tools were most of the objects the
        garbage collector walks."""
        request: dict[str, Any] = orjson.loads(sent)
        if self.retyped:
            request = retyped(request)
        tools = request.get("tools")
        if isinstance(tools, list):
            if len(self._tools) >= MAX_TOOL_LISTS:
                self._tools.clear()
            request["tools"] = self._tools.setdefault(orjson.dumps(tools), tools)
        return request

    def predict(self, job: PredictJob) -> Prediction | str:
        """The prediction, or why there is none (the client could not render the request)."""
        output: Sequence[int] = ()  # what the server generated, in its tokens, is cached after the prompt
        try:
            if job.output_ids is not None:
                output = job.output_ids
            elif self.prompt is not None and job.text:
                output = self.prompt.tokenizer.encode(job.text)
            for worker in job.lost:
                self.replay.worker_lost(worker)
            stream = self.streams.get(job.worker or "")
            self.replay.before_serve = None if stream is None else self._at_match(stream, job)
            return self.replay.diagnose_turn(
                self._parse(job.sent),
                job.started,
                job.session,
                output,
                reported_prompt_tokens=job.reported_prompt_tokens,
                reported_cached=job.reported_cached,
                relocated=job.relocated,
                worker=job.worker,
            )
        except AgentCacheError as exc:
            return f"no prediction: {exc}"

    def _at_match(self, stream: KvEventStream, job: PredictJob) -> Callable[[Sequence[int]], Held]:
        """What runs before the job's turn is served, given its prompt in the server's tokens: drop from the
        worker's model what the server evicted before matching it, and say what the server held of the prompt
        then (the replay brings the model's hold on the prompt's path to it)."""

        def at_match(tokens: Sequence[int]) -> Held:
            answered = job.answered_at if self.replay.options.kind in PUBLISHES_BEFORE_ANSWER else None
            removals, held = stream.at_match(tokens, job.sent_at, job.reported_cached, answered)
            for removal in removals:
                self.replay.server_removed(job.worker, removal.path, removal.start, removal.salt)
            return held

        return at_match
