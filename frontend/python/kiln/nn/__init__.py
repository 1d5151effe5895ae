"""kiln.nn: the neural-network functions (kiln.nn.functional). Modules, parameters and
optimizers are a later part of the package."""

from . import functional  # noqa: F401
