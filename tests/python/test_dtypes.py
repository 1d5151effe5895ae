"""The dtypes beside PyTorch: promote_types for every pair, wrapped-number promotion, and the
small integers (uint8, int8, int16) through arithmetic, reductions, casts and NumPy/DLPack.
Skipped where torch is not installed (CI does not need it)."""

import itertools

import numpy as np
import pytest

import kiln

torch = pytest.importorskip("torch", reason="PyTorch is not installed in this environment")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64"]
INTS = ["uint8", "int8", "int16"]


def _dt(module, name):
    return getattr(module, name)


def _same_name(ours, theirs):
    return repr(ours) == repr(theirs).replace("torch.", "kiln.")


def test_dtype_objects_like_torch():
    for name in NAMES:
        ours, theirs = _dt(kiln, name), _dt(torch, name)
        assert _same_name(ours, theirs)
        assert ours.itemsize == theirs.itemsize, name
        assert ours.is_floating_point == theirs.is_floating_point, name
        assert ours.is_signed == theirs.is_signed, name
    assert kiln.short is kiln.int16


@pytest.mark.parametrize("a,b", list(itertools.product(NAMES, NAMES)))
def test_promote_types_every_pair(a, b):
    ours = kiln.promote_types(_dt(kiln, a), _dt(kiln, b))
    theirs = torch.promote_types(_dt(torch, a), _dt(torch, b))
    assert _same_name(ours, theirs), f"{a} with {b}: kiln {ours}, torch {theirs}"


def _values(name):
    if name == "bool":
        return [True, False, True]
    if name == "uint8":
        return [0, 200, 255]
    if name in ("int8", "int16", "int32", "int64"):
        return [-100, 0, 100]
    return [-1.5, 0.25, 3.0]


@pytest.mark.parametrize("a,b", [(a, b) for a in NAMES for b in NAMES
                                 if a in INTS or b in INTS])
def test_binary_result_dtype_and_values(a, b):
    def run(m):
        x = m.tensor(_values(a), dtype=_dt(m, a))
        y = m.tensor(_values(b), dtype=_dt(m, b))
        return x + y, x * y, x == y
    ours, theirs = run(kiln), run(torch)
    for o, t in zip(ours, theirs):
        assert _same_name(o.dtype, t.dtype)
        assert o.float().tolist() == t.float().tolist()


@pytest.mark.parametrize("name", INTS)
@pytest.mark.parametrize("scalar", [3, 300, -1, -200, 2.5, True])
def test_wrapped_number_promotion(name, scalar):
    def run(m):
        x = m.tensor(_values(name), dtype=_dt(m, name))
        zero_dim = m.tensor(1000)  # int64, 0-dim: does not widen a dimensioned tensor
        return x + scalar, x * scalar, x < scalar, x + zero_dim, x.remainder(7)
    for o, t in zip(run(kiln), run(torch)):
        assert _same_name(o.dtype, t.dtype), (o.dtype, t.dtype)
        assert o.double().tolist() == pytest.approx(t.double().tolist())


@pytest.mark.parametrize("name", INTS)
def test_small_int_ops_match_torch(name):
    vals = {"uint8": [0, 1, 127, 128, 255], "int8": [-128, -1, 0, 1, 127],
            "int16": [-32768, -1, 0, 1, 32767]}[name]

    def run(m):
        x = m.tensor(vals, dtype=_dt(m, name))
        y = m.tensor(vals[::-1], dtype=_dt(m, name))
        return [x + y, x - y, x * y, -x, x.abs(), x / 3, x.sum(), x.prod(), x.cumsum(0),
                x.amax(), x > y, x.float(), x.to(m.int64), x.sort().values, x.relu(),
                m.where(x > 0, x, y), x.maximum(y), x.clamp(0, 100)]
    for o, t in zip(run(kiln), run(torch)):
        assert _same_name(o.dtype, t.dtype), (o, t)
        assert o.double().tolist() == pytest.approx(t.double().tolist()), (o, t)


def test_integer_division_by_zero_raises():
    for name in INTS:
        x = kiln.tensor([1, 2], dtype=_dt(kiln, name))
        with pytest.raises(kiln.KilnError, match="ZeroDivisionError"):
            x.remainder(kiln.tensor([1, 0], dtype=_dt(kiln, name)))


def test_mean_of_small_ints_raises_like_torch():
    with pytest.raises(kiln.KilnError, match="mean"):
        kiln.tensor([1, 2], dtype=kiln.uint8).mean()


def test_float_to_small_int_casts_in_range():
    vals = [0.0, 0.5, 1.99, 100.7, 126.9]
    for name in INTS:
        ours = kiln.tensor(vals).to(_dt(kiln, name)).tolist()
        theirs = torch.tensor(vals).to(_dt(torch, name)).tolist()
        assert ours == theirs, name
    neg = [-128.0, -5.5, -0.5]
    for name in ["int8", "int16"]:
        assert kiln.tensor(neg).to(_dt(kiln, name)).tolist() == \
            torch.tensor(neg).to(_dt(torch, name)).tolist()


@pytest.mark.parametrize("name", INTS)
def test_numpy_and_torch_interop(name):
    np_type = {"uint8": np.uint8, "int8": np.int8, "int16": np.int16}[name]
    a = np.array([1, 2, 3], dtype=np_type)
    t = kiln.from_numpy(a)
    assert t.dtype == _dt(kiln, name)
    t.add_(1)
    assert a.tolist() == [2, 3, 4]  # shared memory
    back = t.numpy()
    assert back.dtype == np_type
    # DLPack both ways with torch.
    tt = torch.from_dlpack(t)
    assert tt.dtype == _dt(torch, name) and tt.tolist() == [2, 3, 4]
    k = kiln.from_dlpack(torch.tensor([7, 8], dtype=_dt(torch, name)))
    assert k.dtype == _dt(kiln, name) and k.tolist() == [7, 8]


def test_tensor_methods_byte_char_short_and_repr():
    x = kiln.tensor([1.7, -2.2, 300.0])
    assert x[:2].char().dtype == kiln.int8
    assert x.short().tolist() == [1, -2, 300]
    assert x[:1].byte().dtype == kiln.uint8
    r = repr(kiln.tensor([1, 255], dtype=kiln.uint8))
    assert r == repr(torch.tensor([1, 255], dtype=torch.uint8)).replace("torch.", "kiln.")


def test_fill_range_check_like_torch():
    with pytest.raises(kiln.KilnError, match="uint8"):
        kiln.full((2,), 300, dtype=kiln.uint8)
    assert kiln.full((2,), -1, dtype=kiln.uint8).tolist() == \
        torch.full((2,), -1, dtype=torch.uint8).tolist()


@pytest.mark.parametrize("values,name", [([300], "uint8"), ([-256], "uint8"), ([128], "int8"),
                                         ([-40000], "int16"), ([2 ** 40], "int32")])
def test_tensor_from_out_of_range_ints_raises_like_torch(values, name):
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.tensor(values, dtype=getattr(torch, name))
    with pytest.raises(kiln.KilnError, match=f"tensor: value cannot be converted to type {name}"):
        kiln.tensor(values, dtype=getattr(kiln, name))


def test_tensor_from_in_range_ints_like_torch():
    for values, name in [([-1, 255], "uint8"), ([-128, 127], "int8"), ([-32768], "int16")]:
        assert kiln.tensor(values, dtype=getattr(kiln, name)).tolist() == \
            torch.tensor(values, dtype=getattr(torch, name)).tolist()
