"""The search tree the drivers grow, its budget, and its export as JSON and Graphviz DOT.

A node's state is a token-id prefix; a child's state is its parent's plus one fork branch (marker + output), so
the search tree is a subtree of the server's radix tree and every request that built it is kept as an
:class:`~agentcache.fork.Exchange` for :func:`~agentcache.search.accounting.account`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentcache.errors import InputError
from agentcache.search.accounting import PrefillAccount, account
from agentcache.search.fork import Branch, Exchange, ForkResult, State, gather_all

Propose = Callable[[State, int], Awaitable[ForkResult]]
"""``propose(state, k)``: up to k candidate next steps from ``state``, as the :class:`ForkResult` of a fork."""


@dataclass(frozen=True)
class Judgement:
    """A score with the request that produced it, so a model judge's prefill is accounted for."""

    value: float
    exchange: Exchange | None = None


Score = float | Judgement
Evaluate = Callable[["SearchNode"], Score | Awaitable[Score]]
"""``evaluate(node)``: how good ``node.state`` is, higher is better; sync or async. It gets the node rather than
the bare state so it can read the step's text."""


@dataclass(eq=False)
class SearchNode:
    """One state of the search. ``branch`` is the fork branch that created it (None for the root)."""

    id: int
    parent: SearchNode | None
    state: State
    depth: int
    branch: Branch | None = None
    children: list[SearchNode] = field(default_factory=list)
    score: float | None = None
    """``evaluate(node)``; None for the root, which is never evaluated."""
    judge: Exchange | None = None
    primed: Exchange | None = None
    """The request that put this state into the cache before its children were forked."""
    visits: int = 0
    value_sum: float = 0.0

    @property
    def text(self) -> str:
        """The text the model wrote for this step; "" for the root."""
        return "" if self.branch is None else self.branch.text

    @property
    def finished(self) -> bool:
        """The model ended its output here (a stop token or string), so there is nothing to continue."""
        return self.branch is not None and self.branch.finish_reason == "stop"

    @property
    def value(self) -> float:
        """Mean backed-up value (MCTS); the score before any visit."""
        return self.value_sum / self.visits if self.visits else (self.score or 0.0)

    def path(self) -> list[SearchNode]:
        """The nodes from the root to this one."""
        nodes: list[SearchNode] = []
        node: SearchNode | None = self
        while node is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]


def ranked(nodes: Iterable[SearchNode]) -> list[SearchNode]:
    """Best score first, ties to the earliest created: the order a beam keeps and picks its answer in."""
    return sorted(nodes, key=lambda node: (-(node.score or 0.0), node.id))


@dataclass(frozen=True)
class Budget:
    """Limits on a search; None is no limit. ``nodes`` counts the tree's nodes, root included, and is never
    exceeded. ``tokens`` (prompt tokens the server prefilled plus tokens it generated, over every request) and
    ``seconds`` are checked before each expansion, so one expansion may end past them."""

    nodes: int | None = None
    tokens: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.nodes is not None and self.nodes < 1:
            raise InputError(f"Budget.nodes counts the root too, so it must be at least 1, got {self.nodes}")

    def room(self, tree: SearchTree) -> int | None:
        """Nodes that may still be added; None when unlimited."""
        return None if self.nodes is None else max(0, self.nodes - len(tree.nodes))

    def allows(self, tree: SearchTree) -> bool:
        """Whether another expansion may start."""
        if self.room(tree) == 0:
            return False
        if self.tokens is not None and tree.tokens_spent() >= self.tokens:
            return False
        return self.seconds is None or tree.elapsed() < self.seconds


class SearchTree:
    """The nodes of one search, the requests that grew them, and the node the driver picked as its answer."""

    def __init__(self, root: Sequence[int]) -> None:
        if not root:
            raise InputError("a search needs a non-empty root prompt (token ids)")
        self.root = SearchNode(0, None, tuple(root), 0)
        self.nodes: list[SearchNode] = [self.root]
        self.exchanges: list[Exchange] = []
        self.best: SearchNode = self.root
        self._started = time.monotonic()
        self._stopped: float | None = None

    def elapsed(self) -> float:
        """Seconds since the tree was created, up to :meth:`stop` once called."""
        end = time.monotonic() if self._stopped is None else self._stopped
        return end - self._started

    def stop(self, best: SearchNode) -> None:
        """Record the answer and freeze the wall time."""
        self.best = best
        self._stopped = time.monotonic()

    def tokens_spent(self) -> int:
        """Prompt tokens prefilled (the whole prompt when the server did not report cache) plus tokens generated."""
        return sum(
            (ex.prompt_tokens if ex.prefilled is None else ex.prefilled) + len(ex.output) for ex in self.exchanges
        )

    def account(self) -> PrefillAccount:
        return account(self.exchanges)

    def grow(self, node: SearchNode, result: ForkResult, k: int) -> list[SearchNode]:
        """Add up to ``k`` of the fork's branches as children of ``node``; ids follow branch order."""
        if result.prefix != node.state:
            raise InputError(
                "propose() returned a fork of another prefix than the node's state; fork from the state it is given"
            )
        node.primed = result.primed
        self.exchanges.extend(result.exchanges)
        children = [
            SearchNode(len(self.nodes) + i, node, branch.state, node.depth + 1, branch)
            for i, branch in enumerate(result.branches[:k])
        ]
        node.children.extend(children)
        self.nodes.extend(children)
        return children

    async def score(self, nodes: Sequence[SearchNode], evaluate: Evaluate) -> None:
        """Evaluate ``nodes`` concurrently; judges' requests are recorded in node order."""

        async def one(node: SearchNode) -> Score:
            score = evaluate(node)
            return await score if inspect.isawaitable(score) else score

        for node, score in zip(nodes, await gather_all(one(node) for node in nodes), strict=True):
            if isinstance(score, Judgement):
                node.score, node.judge = float(score.value), score.exchange
                if score.exchange is not None:
                    self.exchanges.append(score.exchange)
            else:
                node.score = float(score)

    async def expand(self, node: SearchNode, propose: Propose, k: int, evaluate: Evaluate) -> list[SearchNode]:
        """Fork ``k`` children from ``node`` and evaluate them."""
        children = self.grow(node, await propose(node.state, k), k)
        await self.score(children, evaluate)
        return children

    def to_dict(self) -> dict[str, Any]:
        """Every node with its tokens and scores, plus the run's account; the JSON export."""
        return {
            "root_tokens": len(self.root.state),
            "best": self.best.id,
            "best_path": [node.id for node in self.best.path()],
            "seconds": round(self.elapsed(), 3),
            "account": self.account().to_dict(),
            "nodes": [_node_dict(node) for node in self.nodes],
        }

    def to_json(self) -> str:
        return orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2).decode()

    def to_dot(self, text_chars: int = 32) -> str:
        """Graphviz DOT: a box per node with its prompt, cached and prefilled tokens; the best path in bold."""
        on_path = {node.id for node in self.best.path()}
        lines = ["digraph search {", '  node [shape=box, fontname="monospace"];']
        for node in self.nodes:
            style = ", style=bold" if node.id in on_path else ""
            lines.append(f'  n{node.id} [label="{_dot_label(node, text_chars)}"{style}];')
        lines += [f"  n{node.parent.id} -> n{node.id};" for node in self.nodes if node.parent is not None]
        lines.append("}")
        return "\n".join(lines) + "\n"


def _counts(ex: Exchange | None) -> dict[str, int | None] | None:
    if ex is None:
        return None
    return {"prompt": ex.prompt_tokens, "cached": ex.cached_tokens, "prefilled": ex.prefilled}


def _node_dict(node: SearchNode) -> dict[str, Any]:
    created = None if node.branch is None else node.branch.exchange
    return {
        "id": node.id,
        "parent": None if node.parent is None else node.parent.id,
        "depth": node.depth,
        "branch": None if node.branch is None else node.branch.index,
        "text": node.text,
        "state_tokens": len(node.state),
        "prompt_tokens": None if created is None else created.prompt_tokens,
        "cached_tokens": None if created is None else created.cached_tokens,
        "prefilled_tokens": None if created is None else created.prefilled,
        "generated_tokens": None if created is None else len(created.output),
        "finish_reason": None if node.branch is None else node.branch.finish_reason,
        "prime": _counts(node.primed),
        "judge": _counts(node.judge),
        "score": node.score,
        "visits": node.visits,
        "value": node.value if node.visits else None,
    }


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _dot_label(node: SearchNode, text_chars: int) -> str:
    lines = [f"#{node.id} depth {node.depth}, {len(node.state)} tokens"]
    if node.branch is not None:
        ex = node.branch.exchange
        lines.append(f"prompt {ex.prompt_tokens} cached {ex.cached_tokens} prefilled {ex.prefilled}")
        lines.append(repr(node.text[:text_chars]))
    if node.primed is not None:
        lines.append(f"prime: cached {node.primed.cached_tokens} prefilled {node.primed.prefilled}")
    if node.score is not None:
        lines.append(
            f"score {node.score:.3g}" + (f" value {node.value:.3g} visits {node.visits}" if node.visits else "")
        )
    return "\\n".join(_dot_escape(line) for line in lines)
