"""``python -m agentcache``: the same as the ``agentcache`` command."""

from agentcache.cli import main

raise SystemExit(main())
