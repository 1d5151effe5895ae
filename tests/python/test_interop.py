"""NumPy and DLPack in both directions, without copies where torch makes none."""

import numpy as np
import pytest

import kiln


def test_numpy_shares_memory_and_keeps_storage_alive():
    x = kiln.arange(6, dtype=kiln.float32).view(2, 3)
    a = x.numpy()
    assert a.dtype == np.float32 and a.shape == (2, 3)
    a[0, 0] = 42.0
    assert x[0, 0].item() == 42.0  # same memory
    del x
    import gc
    gc.collect()
    assert a.sum() == 42.0 + 1 + 2 + 3 + 4 + 5  # the array keeps the storage alive


def test_numpy_of_a_strided_view_is_a_view():
    x = kiln.arange(12, dtype=kiln.float64).view(3, 4)
    a = x.t().numpy()
    assert a.shape == (4, 3) and a.strides == (8, 32)
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4).T)


def test_numpy_refuses_like_torch():
    with pytest.raises((RuntimeError, ValueError), match="requires grad"):
        kiln.ones(2, requires_grad=True).numpy()
    with pytest.raises(TypeError, match="BFloat16"):
        kiln.ones(2, dtype=kiln.bfloat16).numpy()
    assert kiln.ones(2, requires_grad=True).numpy(force=True).tolist() == [1.0, 1.0]


def test_from_numpy_shares_memory():
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    t = kiln.from_numpy(a)
    assert t.dtype == kiln.int64 and t.shape == (2, 3)
    a[1, 2] = -7
    assert t[1, 2].item() == -7
    t.add_(1)
    assert a[0, 0] == 1
    b = np.arange(10.0)[::2]
    tb = kiln.from_numpy(b)
    assert tb.stride() == (2,) and tb.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    with pytest.raises(TypeError, match="expected np.ndarray"):
        kiln.from_numpy([1, 2])
    with pytest.raises(TypeError):
        kiln.from_numpy(np.zeros(3, dtype=np.uint16))
    with pytest.raises(ValueError, match="negative"):
        kiln.from_numpy(np.arange(4.0)[::-1])
    assert kiln.from_numpy(np.zeros((0, 3), dtype=np.float32)).shape == (0, 3)


def test_dlpack_both_ways_without_copies():
    x = kiln.arange(4, dtype=kiln.float32)
    a = np.from_dlpack(x)
    a[0] = 9.0
    assert x[0].item() == 9.0
    assert x.__dlpack_device__() == (1, 0)
    n = np.arange(3, dtype=np.float64)
    t = kiln.from_dlpack(n)
    n[2] = -1.0
    assert t.tolist() == [0.0, 1.0, -1.0]
    with pytest.raises((RuntimeError, ValueError), match="require gradient"):
        x.requires_grad_().__dlpack__()


def test_tensor_copies_numpy_input():
    a = np.ones(3, dtype=np.float64)
    t = kiln.tensor(a)
    a[0] = 5.0
    assert t.dtype == kiln.float64 and t.tolist() == [1.0, 1.0, 1.0]
