"""Redaction: nothing agentcache writes holds a credential, and a trace recorded without content keeps what its
drift analysis needs.

- :mod:`agentcache.redact.credentials`: :func:`redact`, the one rule for credentials, which the trace
  recorder, ``Turn.to_json``, the OpenTelemetry spans, ``explain`` and the report all apply.
"""

from __future__ import annotations

from agentcache.redact.credentials import CREDENTIAL, overlaps_credential, redact

__all__ = ["CREDENTIAL", "overlaps_credential", "redact"]
