"""The SGLang server a bench runs against: the URL on its command line, or the project's CPU engine."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def arguments(doc: str | None, rounds: int) -> argparse.ArgumentParser:
    """A bench's command line: an optional SGLang URL, and ``--rounds``."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("url", nargs="?", help="SGLang base URL; default: start the project's CPU engine")
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser


def url(given: str | None) -> str:
    """``given``, or the project's CPU engine: installed the first time, started or reused, as the examples do."""
    return given if given is not None else local_engine().start("sglang")


def local_engine() -> ModuleType:
    """``examples/local_engine.py``, which installs and starts the project's engines."""
    sys.path.insert(0, str(ROOT / "examples"))
    return importlib.import_module("local_engine")
