"""Tree search over token-id states whose expansions are forks, so the server computes each shared prefix once.

- :class:`MCTS` (UCT) and :class:`TreeOfThoughts` (BFS / beam) drive the search; both take a ``propose(state, k)``
  (:class:`ForkProposer` forks through :func:`agentcache.fork.fork`) and an ``evaluate(node)`` (a function of
  yours, :class:`ModelJudge` or :class:`ProbabilityJudge`), and return a :class:`SearchTree`;
- :class:`SearchTree` exports as JSON and Graphviz DOT with each node's prompt, cached and prefilled tokens;
- :func:`account` adds up a run's prefill against the naive cost and the unique-token lower bound.

Guide and measurements: docs/search.md.
"""

from __future__ import annotations

from agentcache.search.accounting import PrefillAccount, account, trie_size
from agentcache.search.judge import ModelJudge, ProbabilityJudge
from agentcache.search.mcts import MCTS, ForkProposer
from agentcache.search.tot import TreeOfThoughts
from agentcache.search.tree import Budget, Evaluate, Judgement, Propose, SearchNode, SearchTree, ranked

__all__ = [
    "MCTS",
    "Budget",
    "Evaluate",
    "ForkProposer",
    "Judgement",
    "ModelJudge",
    "PrefillAccount",
    "ProbabilityJudge",
    "Propose",
    "SearchNode",
    "SearchTree",
    "TreeOfThoughts",
    "account",
    "ranked",
    "trie_size",
]
