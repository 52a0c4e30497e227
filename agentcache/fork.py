"""Public home of the fork: ``from agentcache.fork import fork, fork_chat``.

The code is :mod:`agentcache.search.fork`, next to the tree search whose expansions are forks.
"""

from __future__ import annotations

from agentcache.search.fork import (
    DEFAULT_LABELS,
    Branch,
    ChatBranch,
    ChatFork,
    Exchange,
    ForkPlan,
    ForkResult,
    State,
    branch_markers,
    fork,
    fork_chat,
    prime_fork,
    send_branch,
)

__all__ = [
    "DEFAULT_LABELS",
    "Branch",
    "ChatBranch",
    "ChatFork",
    "Exchange",
    "ForkPlan",
    "ForkResult",
    "State",
    "branch_markers",
    "fork",
    "fork_chat",
    "prime_fork",
    "send_branch",
]
