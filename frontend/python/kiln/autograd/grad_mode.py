"""Grad-mode context managers, usable as decorators too (torch's no_grad, enable_grad,
set_grad_enabled). Grad mode is per thread, as in torch."""

import functools

from .. import _C


class _GradModeContext:
    _enabled = None

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Ops inside record no autograd history."""
    _enabled = False


class enable_grad(_GradModeContext):
    """Ops inside record autograd history, even within no_grad."""
    _enabled = True


class set_grad_enabled(_GradModeContext):
    """Sets grad mode at once (as a function) or for a block (as a context manager)."""

    def __init__(self, mode):
        self._prev = _C.is_grad_enabled()
        self._enabled = bool(mode)
        _C._set_grad_enabled(self._enabled)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        mode = self._enabled
        _C._set_grad_enabled(self._prev)  # as a decorator it changes nothing until called

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper
