"""Anomaly mode (torch's detect_anomaly): each Node records the op and the call site that
created it, and backward raises when a Node returns NaN, naming them."""

import functools
import warnings

from .. import _C


class detect_anomaly:
    def __init__(self, check_nan=True):
        if not check_nan:
            raise NotImplementedError("detect_anomaly(check_nan=False) is not supported")
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self._prev = _C._is_anomaly_enabled()
        _C._set_anomaly_enabled(True)
        return self

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly():
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    def __init__(self, mode, check_nan=True):
        self._prev = _C._is_anomaly_enabled()
        _C._set_anomaly_enabled(bool(mode))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self._prev)
        return False


def is_anomaly_enabled():
    return _C._is_anomaly_enabled()
