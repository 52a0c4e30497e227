"""Framework integrations (integrations/) against the real engines."""
