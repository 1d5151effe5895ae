"""pytest configuration for the Python package's tests. They import the package from the build
folder (PYTHONPATH=build/python, as scripts/test.sh runs them) or from an installed kiln."""

import gc

import pytest

import kiln


@pytest.fixture
def live():
    """Counts of live C++ tensors, Nodes and Python wrappers (kiln._C._live_objects), taken
    after a full garbage collection."""
    def snapshot():
        gc.collect()
        return kiln._C._live_objects()
    return snapshot
