"""kiln.Tensor from Python: identity, factories, metadata, repr, scalars and promotion,
indexing, and Python-level errors. References are closed-form values or plain Python loops."""

import math

import pytest

import kiln


def test_one_python_object_per_tensor():
    x = kiln.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    assert x.grad is x.grad
    y = x * 3
    assert y.grad_fn is y.grad_fn
    g = x.grad
    g.note = "kept"
    assert x.grad.note == "kept"  # the same object while Python holds it


def test_wrapper_survives_while_cpp_holds_the_tensor(live):
    """PyObject preservation (Note [Python object preservation]): a wrapper Python dropped
    lives on while C++ holds its tensor, with its attributes, and goes when the tensor does."""
    x = kiln.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    x.grad.note = "kept"  # the wrapper is dropped at once; only x's AutogradMeta holds .grad
    assert x.grad.note == "kept"
    y = x * 3
    y.grad_fn.metadata["step"] = 7
    assert y.grad_fn.metadata == {"step": 7}
    first = id(y.grad_fn)
    assert id(y.grad_fn) == first
    before = live()
    del x, y
    after = live()
    assert after["wrappers"] == before["wrappers"] - 4  # x, y, x.grad and y.grad_fn
    assert after["tensors"] < before["tensors"] and after["nodes"] < before["nodes"]


def test_in_place_ops_return_the_same_object():
    x = kiln.zeros(4)
    assert x.add_(1) is x
    assert x.mul_(3) is x
    x += 1
    assert x.tolist() == [4.0, 4.0, 4.0, 4.0]


def test_attributes_survive_while_python_holds_the_tensor():
    x = kiln.zeros(2)
    x.name = "weights"
    views = [x, x.detach()]
    assert views[0].name == "weights"
    assert not hasattr(views[1], "name")  # detach() is another tensor, as in torch


def test_factories_and_metadata():
    assert kiln.zeros(2, 3).shape == (2, 3)
    assert kiln.zeros((2, 3)).size() == (2, 3)
    assert kiln.ones([4]).size(0) == 4
    assert kiln.empty(0).numel() == 0
    assert kiln.full((2,), 7).dtype == kiln.int64
    assert kiln.full((2,), 7.0).tolist() == [7.0, 7.0]
    assert kiln.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert kiln.arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert kiln.arange(3).dtype == kiln.int64
    assert kiln.zeros(3, dtype=kiln.float64).dtype is kiln.float64
    assert kiln.zeros_like(kiln.ones(2, 2, dtype=kiln.int32)).dtype == kiln.int32
    assert kiln.ones(2, requires_grad=True).requires_grad
    assert kiln.rand(100).min().item() >= 0.0
    assert kiln.randn(3, 4).shape == (3, 4)
    x = kiln.ones(2, 3)
    assert x.dim() == 2 and x.ndim == 2 and x.numel() == 6 and len(x) == 2
    assert x.stride() == (3, 1) and x.is_contiguous() and not x.t().is_contiguous()
    assert x.device == kiln.device("cpu") and x.device == "cpu" and str(x.device) == "cpu"
    assert x.dtype is kiln.float32 and kiln.float is kiln.float32 and kiln.long is kiln.int64


def test_tensor_from_nested_data():
    t = kiln.tensor([[1, 2], [3, 4]])
    assert t.dtype == kiln.int64 and t.tolist() == [[1, 2], [3, 4]]
    assert kiln.tensor([1, 2.5]).dtype == kiln.float32
    assert kiln.tensor([True, False]).dtype == kiln.bool
    assert kiln.tensor(3.5).dim() == 0 and kiln.tensor(3.5).item() == 3.5
    assert kiln.tensor([]).shape == (0,)
    assert kiln.tensor([1, 2], dtype=kiln.float64).dtype == kiln.float64
    with pytest.raises(ValueError, match="expected sequence of length 2 at dim 1"):
        kiln.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        kiln.tensor(["a"])


def test_item_tolist_and_python_conversions():
    assert kiln.tensor(2.5).item() == 2.5
    assert isinstance(kiln.tensor(3).item(), int)
    assert kiln.tensor(True).item() is True
    assert float(kiln.tensor([1.5])) == 1.5 and int(kiln.tensor(7)) == 7
    assert bool(kiln.tensor([1]))
    with pytest.raises((ValueError, RuntimeError), match="ambiguous"):
        bool(kiln.ones(2))
    with pytest.raises(kiln.KilnError):
        kiln.ones(2).item()
    assert list(range(10))[kiln.tensor(3)] == 3  # __index__


def test_python_scalar_promotion_follows_torch():
    i = kiln.tensor([1, 2, 3])
    assert (i * 2.5).dtype == kiln.float32
    assert (i * 2).dtype == kiln.int64
    assert (i + True).dtype == kiln.int64
    f16 = kiln.ones(2, dtype=kiln.float16)
    assert (f16 * 2.5).dtype == kiln.float16
    assert (2.5 * i).tolist() == [2.5, 5.0, 7.5]
    assert (1 - kiln.tensor([1.0, 2.0])).tolist() == [0.0, -1.0]
    assert (1 / kiln.tensor([2.0, 4.0])).tolist() == [0.5, 0.25]
    assert (2 ** kiln.tensor([1.0, 3.0])).tolist() == [2.0, 8.0]
    assert (kiln.tensor([3.0]) ** 2).tolist() == [9.0]


def test_operators_and_comparisons():
    a, b = kiln.tensor([1.0, 2.0, 3.0]), kiln.tensor([3.0, 2.0, 1.0])
    assert (a + b).tolist() == [4.0, 4.0, 4.0]
    assert (a - b).tolist() == [-2.0, 0.0, 2.0]
    assert (a / b).tolist()[0] == pytest.approx(1 / 3)
    assert (-a).tolist() == [-1.0, -2.0, -3.0]
    assert abs(-a).tolist() == a.tolist()
    assert (a == b).tolist() == [False, True, False]
    assert (a < b).tolist() == [True, False, False]
    assert (a >= 2).tolist() == [False, True, True]
    assert ((a > 1) & (b > 1)).tolist() == [False, True, False]
    assert (~(a > 1)).tolist() == [True, False, False]
    m = kiln.arange(6, dtype=kiln.float32).view(2, 3)
    assert (m @ kiln.ones(3)).tolist() == [3.0, 12.0]
    assert (a == None) is False  # noqa: E711  (no tensor, no comparison)
    assert {a: 1}[a] == 1  # hashable by identity, as torch tensors are


def test_repr_matches_torch_format():
    assert repr(kiln.tensor([1.0, 2.0, 3.0])) == "tensor([1., 2., 3.])"
    assert repr(kiln.tensor([[1, 2], [3, 4]])) == "tensor([[1, 2],\n        [3, 4]])"
    assert repr(kiln.tensor(3.5)) == "tensor(3.5000)"
    assert repr(kiln.tensor([0.5, -1.25])) == "tensor([ 0.5000, -1.2500])"
    assert repr(kiln.tensor([1.0], dtype=kiln.float64)) == "tensor([1.], dtype=kiln.float64)"
    assert repr(kiln.tensor([1.0], requires_grad=True)) == "tensor([1.], requires_grad=True)"
    assert repr(kiln.tensor([True, False])) == "tensor([ True, False])"
    assert repr(kiln.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    y = kiln.tensor([1.0], requires_grad=True) * 2
    assert repr(y) == f"tensor([2.], grad_fn=<{y.grad_fn.name()}>)"
    assert repr(kiln.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert "..." in repr(kiln.zeros(2000))


def test_indexing_reads():
    x = kiln.arange(24).view(2, 3, 4)
    ref = [[[i * 12 + j * 4 + k for k in range(4)] for j in range(3)] for i in range(2)]
    assert x[1].tolist() == ref[1]
    assert x[-1, 2].tolist() == ref[1][2]
    assert x[:, 1:3, ::2].tolist() == [[row[::2] for row in m[1:3]] for m in ref]
    assert x[..., 0].tolist() == [[row[0] for row in m] for m in ref]
    assert x[None, 0].shape == (1, 3, 4)
    assert x[0, None, :, None].shape == (1, 3, 1, 4)
    idx = kiln.tensor([2, 0])
    assert x[0, idx].tolist() == [ref[0][2], ref[0][0]]
    assert x[kiln.tensor([[1], [0]])].shape == (2, 1, 3, 4)
    assert [row.tolist() for row in kiln.tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]


def test_index_errors_follow_torch():
    x = kiln.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x[3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(kiln.tensor(1.0))
    with pytest.raises(TypeError):
        x["a"]
    assert list(iter(kiln.arange(3))) is not None and len(list(kiln.arange(3))) == 3


def test_setitem_writes_through_in_place_ops():
    x = kiln.zeros(3, 4)
    x[1] = 5.0
    x[:, 0] = kiln.tensor([1.0, 2.0, 3.0])
    x[2, 1:3] = kiln.ones(2)
    ref = [[1.0, 0, 0, 0], [2.0, 5, 5, 5], [3.0, 1, 1, 0]]
    assert x.tolist() == ref
    v0 = x._version
    x[0, 3] = 9
    assert x._version > v0 and x[0, 3].item() == 9.0


def test_wrong_arguments_raise_type_errors_naming_the_op():
    x = kiln.ones(2, 3)
    with pytest.raises(TypeError, match="sum"):
        x.sum(keepdim="yes")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        kiln.exp(x, bogus=1)
    with pytest.raises(TypeError, match="Tensor"):
        kiln.exp("not a tensor")
    with pytest.raises(TypeError, match="missing required argument 'other'"):
        kiln.ops.mul(x)


def test_bad_shapes_and_dtypes_raise_kiln_error_naming_the_op():
    with pytest.raises(kiln.KilnError, match="mm") as info:
        kiln.ops.mm(kiln.ones(2, 3), kiln.ones(2, 3))
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(kiln.KilnError, match="add"):
        kiln.ones(2, 3) + kiln.ones(4)
    with pytest.raises(kiln.KilnError):
        kiln.ones(2).view(3)


def test_devices():
    assert kiln.device("cuda:1").index == 1 and kiln.device("cuda:1").type == "cuda"
    assert repr(kiln.device("cpu")) == "device(type='cpu')"
    with pytest.raises(ValueError):
        kiln.device("tpu")
    assert isinstance(kiln.cuda.is_available(), bool)
    assert kiln.cuda.device_count() >= 0
    if not kiln.cuda.is_available():
        with pytest.raises(kiln.KilnError):
            kiln.ones(2, device="cuda")


def test_views_and_composites():
    x = kiln.arange(6, dtype=kiln.float32)
    assert x.view(2, 3).shape == (2, 3) and x.view((3, 2)).shape == (3, 2)
    assert x.reshape(3, -1).shape == (3, 2)
    assert x.view(2, 3).permute(1, 0).shape == (3, 2)
    assert x.view(2, 3).T.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert x.view(1, 2, 3).flatten().shape == (6,)
    assert [c.tolist() for c in x.chunk(3)] == [[0, 1], [2, 3], [4, 5]]
    assert kiln.stack([x, x]).shape == (2, 6)
    assert kiln.cat([x, x]).shape == (12,)
    assert kiln.cat((x.view(2, 3), x.view(2, 3)), dim=1).shape == (2, 6)
    assert x.sum().item() == 15.0 and x.view(2, 3).sum(1).tolist() == [3.0, 12.0]
    assert x.view(2, 3).sum(dim=0, keepdim=True).shape == (1, 3)
    assert x.view(2, 3).mean(-1).tolist() == [1.0, 4.0]
    values, indices = x.view(2, 3).max(1)
    assert values.tolist() == [2.0, 5.0] and indices.tolist() == [2, 2]
    assert x.view(2, 3).index_select(1, kiln.tensor([0, 2])).tolist() == [[0, 2], [3, 5]]
    assert x.to(kiln.float64).dtype == kiln.float64 and x.double().dtype == kiln.float64
    assert x.to("cpu") is x
    assert math.isclose(x.var().item(), 3.5)


def test_comparison_helpers_and_new_factories():
    a = kiln.tensor([1.0, 2.0, 3.0])
    b = a + 1e-7
    assert kiln.allclose(a, b) and not kiln.allclose(a, a + 1e-3)
    assert kiln.isclose(a, kiln.tensor([1.0, 2.5, 3.0])).tolist() == [True, False, True]
    assert kiln.equal(a, a.clone()) and not kiln.equal(a, a[:2]) and not kiln.equal(a, b)
    assert kiln.is_tensor(a) and not kiln.is_tensor([1.0]) and kiln.is_floating_point(a)
    assert a.norm().item() == pytest.approx(math.sqrt(14.0))
    assert kiln.tensor([[3.0, 4.0]]).norm(dim=1).tolist() == [5.0]
    z = a.new_zeros(2, 2)
    assert z.shape == (2, 2) and z.dtype == a.dtype and z.sum().item() == 0.0
    assert a.new_full((3,), 7.0).tolist() == [7.0] * 3
    assert a.new_tensor([1, 2]).dtype == kiln.float32
    assert a.type(kiln.int64).dtype == kiln.int64 and a.type() == "kiln.float32Tensor"


def test_norm_orders():
    x = kiln.tensor([3.0, -4.0])
    assert x.norm(1).item() == 7.0
    assert x.norm(float("inf")).item() == 4.0
    assert x.norm(3).item() == pytest.approx((27 + 64) ** (1 / 3))
    with pytest.raises(ValueError):
        x.norm(-1)
