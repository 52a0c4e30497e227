"""Redaction: nothing agentcache writes holds a credential, and a trace recorded without content keeps what its
drift analysis needs.

- :mod:`agentcache.redact.credentials`: :func:`redact`, the one rule for credentials, which the trace
  recorder, ``Turn.to_json``, the OpenTelemetry spans, ``explain`` and the report all apply.
- :mod:`agentcache.redact.content`: :func:`redact_conversation`, the markers a trace recorded without content
  holds, and :func:`comparable` and :func:`redacted_change`, with which the drift classifier reads them back.
"""

from __future__ import annotations

from agentcache.redact.content import (
    CONVERSATION,
    NUMBER,
    RedactedChange,
    comparable,
    redact_conversation,
    redacted_change,
)
from agentcache.redact.credentials import CREDENTIAL, names_credential, overlaps_credential, redact

__all__ = [
    "CONVERSATION",
    "CREDENTIAL",
    "NUMBER",
    "RedactedChange",
    "comparable",
    "names_credential",
    "overlaps_credential",
    "redact",
    "redact_conversation",
    "redacted_change",
]
