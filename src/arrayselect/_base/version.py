"""The version of this arrayselect, written once (``pyproject.toml`` has the same)."""

__version__ = "0.1.0"
