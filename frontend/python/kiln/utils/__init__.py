"""kiln.utils: checkpoint."""

from . import checkpoint  # noqa: F401
