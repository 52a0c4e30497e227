"""Prediction: what a server will report as cached for each turn, and why a turn missed.

Requests are rendered into segments (:mod:`~agentcache.predict.prompt`), served through a client-side cache model
(:class:`~agentcache.cache.base.PrefixCacheModel`) by a :class:`Replay`, and each turn is diagnosed against the
previous turn of its session (:mod:`~agentcache.predict.diagnosis`, with the cause codes of
:mod:`~agentcache.predict.causes`). The live transport and the offline explainer are both built on it.
"""

from __future__ import annotations

from agentcache.predict.diagnosis import Diagnosis, Previous, diagnose
from agentcache.predict.diff import Divergence
from agentcache.predict.replay import WHAT_IF_POLICY, Prediction, Replay, cache_namespace
from agentcache.predict.served import Served

__all__ = [
    "WHAT_IF_POLICY",
    "Diagnosis",
    "Divergence",
    "Prediction",
    "Previous",
    "Replay",
    "Served",
    "cache_namespace",
    "diagnose",
]
