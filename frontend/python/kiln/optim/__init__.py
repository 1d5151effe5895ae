"""kiln.optim: torch.optim's SGD, Adam and AdamW for Kiln tensors.

Each parameter group is one C++ optimizer (``kiln._C._optim``, frontend/optim/). On the CPU a
step over float32 or float64 parameters is one compiled multi-tensor kernel over all of them;
elsewhere, or with ``fused=False``, the same update runs as tensor ops. A group's ``'lr'`` is
read on every step, so schedules work by assigning it, as in torch; the other options are fixed
when the group is added.
"""

from .. import _C
from .._C import KilnError, Tensor

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler"]


class Optimizer:
    """torch.optim.Optimizer's interface: ``param_groups``, ``state``, ``step``, ``zero_grad``
    and ``add_param_group``."""

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.param_groups = []
        self._impls = []
        self._fixed = []
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                f"dicts, but got {type(params).__name__}")
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        for group in params:
            self.add_param_group(group)

    def add_param_group(self, param_group):
        group = dict(param_group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is "
                    f"{type(p).__name__}")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        for name, value in self.defaults.items():
            group.setdefault(name, value)
        self._impls.append(self._make(group))
        self._fixed.append({k: group[k] for k in self.defaults if k != "lr"})
        self.param_groups.append(group)

    def _make(self, group):
        raise NotImplementedError

    def step(self, closure=None):
        """Updates every parameter that has a gradient; returns closure()'s loss when given."""
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad

            with enable_grad():
                loss = closure()
        for group, impl, fixed in zip(self.param_groups, self._impls, self._fixed):
            for name, value in fixed.items():
                if group[name] != value:
                    raise KilnError(
                        f"{type(self).__name__}: param_groups option '{name}' changed from "
                        f"{value!r} to {group[name]!r}; only 'lr' may change after the group "
                        "is added")
            impl.set_lr(float(group["lr"]))
            impl.step()
        return loss

    def zero_grad(self, set_to_none=True):
        for impl in self._impls:
            impl.zero_grad(set_to_none)

    @property
    def state(self):
        """Per parameter with state: ``step`` (a float32 tensor, as torch's) and the state
        tensors by torch's names, the live tensors the steps update."""
        out = {}
        for group, impl in zip(self.param_groups, self._impls):
            for i, p in enumerate(group["params"]):
                tensors = impl.state(i)
                if not tensors:
                    continue
                entry = {"step": _C.tensor(float(impl.step_count(i)))}
                entry.update(zip(self._state_names, tensors))
                out[p] = entry
        return out

    @property
    def last_step_compiled(self):
        """Whether every group's last step ran the compiled multi-tensor kernel."""
        return all(impl.last_step_compiled for impl in self._impls)

    def __repr__(self):
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for name in sorted(k for k in group if k != "params"):
                lines.append(f"    {name}: {group[name]}")
        return "\n".join(lines) + "\n)"


def _unsupported(name, **flags):
    for flag, value in flags.items():
        if value:
            raise KilnError(f"{name}: {flag}=True is not supported by kiln.optim")


class SGD(Optimizer):
    """torch.optim.SGD: momentum, dampening, Nesterov and L2 weight decay."""

    _state_names = ("momentum_buffer",)

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        _unsupported("SGD", maximize=maximize, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, fused=fused))

    def _make(self, g):
        return _C._optim.sgd(g["params"], float(g["lr"]), float(g["momentum"]),
                             float(g["dampening"]), float(g["weight_decay"]),
                             bool(g["nesterov"]), g["fused"])


class Adam(Optimizer):
    """torch.optim.Adam, its weight decay an L2 term added to the gradient."""

    _state_names = ("exp_avg", "exp_avg_sq")
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        _unsupported(type(self).__name__, amsgrad=amsgrad, maximize=maximize,
                     differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, fused=fused))

    def _make(self, g):
        b1, b2 = g["betas"]
        return _C._optim.adam(g["params"], float(g["lr"]), (float(b1), float(b2)),
                              float(g["eps"]), float(g["weight_decay"]), self._decoupled,
                              g["fused"])


class AdamW(Adam):
    """torch.optim.AdamW: Adam with decoupled weight decay (default 1e-2)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused)


from . import lr_scheduler  # noqa: E402  (kiln.optim.lr_scheduler, as torch)
