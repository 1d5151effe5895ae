"""kiln.compile: trace a Python function's forward and backward and run them compiled.

    @kiln.compile
    def step(x, y):
        return kiln.nn.functional.cross_entropy(model(x), y)

Arguments and results may be tensors, Python scalars, strings, None, and tuples, lists and
dicts of them. Python control flow runs once, at trace time, and is specialized: a plan is
kept per structure of the arguments and per value of their Python scalars (the guards), and
within that, per tensor signature by the C++ CompiledFunction (frontend/compile.h). A call
with a new structure or scalar value compiles again, and says why under
KILN_LOGS=recompiles. Tensors the function reads from outside its arguments are handled as
in C++: those that require grad are read anew on every call, the rest are constants.
"""

import functools
import itertools
import warnings

from . import _C, _tree
from ._C import Tensor

_counter = itertools.count()


class _Plan:
    """One argument structure (and set of scalar values): a C++ CompiledFunction."""

    def __init__(self, owner, spec):
        self.spec = spec
        # The traced function must not refer to this plan or its owner: the C++ object holds
        # it, and a cycle through C++ is one the garbage collector cannot see.
        out_spec = self.out_spec = [None]
        fn = owner._fn

        def flat_fn(tensors):
            args, kwargs = _tree.unflatten(spec, tensors)
            flat, out_spec[0] = _tree.flatten(fn(*args, **kwargs))
            return flat

        self.flat_fn = flat_fn  # the C++ object refers to it weakly
        self.compiled = _C._CompiledFunction(flat_fn, owner._backend, owner._cache_limit,
                                             owner._debug_dir, owner._name, owner._rematerialize,
                                             owner._dynamic)

    def __call__(self, tensors):
        flat = self.compiled(tensors)
        if self.out_spec[0] == _tree.TENSOR:
            return flat[0]
        return _tree.unflatten(self.out_spec[0], flat)


class CompiledFunction:
    def __init__(self, fn, backend="auto", debug_dir=None, name=None, cache_limit=8,
                 rematerialize=True, dynamic=None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._backend = backend
        self._debug_dir = debug_dir or ""
        self._name = name or getattr(fn, "__name__", None) or f"compiled_fn_{next(_counter)}"
        self._cache_limit = cache_limit
        self._rematerialize = rematerialize
        self._dynamic = dynamic
        self._plans = {}
        self._by_arity = {}  # plans for calls whose arguments are all tensors, by count
        self._last = None
        self._last_spec = None
        self._warned = False
        self._eager_calls = 0

    def __call__(self, *args, **kwargs):
        # Fast path: positional tensors only, the usual call of a training step.
        if not kwargs:
            for a in args:
                if type(a) is not Tensor:
                    break
            else:
                plan = self._by_arity.get(len(args))
                if plan is not None:
                    self._last = plan
                    self._last_spec = plan.spec
                    return plan(list(args))
        tensors, spec = _tree.flatten((args, kwargs))
        plan = self._plans.get(spec)
        if plan is None:
            if len(self._plans) >= self._cache_limit:
                if not self._warned:
                    warnings.warn(f"kiln.compile: {self._name} reached cache_limit="
                                  f"{self._cache_limit} argument structures; further new ones "
                                  "run eagerly", stacklevel=2)
                    self._warned = True
                self._eager_calls += 1
                return self._fn(*args, **kwargs)
            if self._last_spec is not None and _C._log_topic_enabled("recompiles"):
                why = _tree.describe_difference(self._last_spec, spec)
                _C._log_line("recompiles", f"{self._name}: recompiling because {why}")
            plan = _Plan(self, spec)
            self._plans[spec] = plan
            if not kwargs and len(tensors) == len(args) and all(type(a) is Tensor for a in args):
                self._by_arity[len(args)] = plan
        self._last = plan
        self._last_spec = spec
        return plan(tensors)

    def stats(self):
        """The C++ CompileStats of the most recent plan, with ``compiles``, ``cache_hits`` and
        ``eager_calls`` summed over every plan of this function."""
        if self._last is None:
            raise RuntimeError(f"{self._name}: stats() before the first call")
        out = self._last.compiled.stats()
        all_stats = [p.compiled.stats() for p in self._plans.values()]
        for key in ("compiles", "cache_hits", "eager_calls"):
            out[key] = sum(s[key] for s in all_stats)
        out["eager_calls"] += self._eager_calls
        return out

    def dump(self, stage=None, dot=False):
        """Every IR stage of the most recent plan, or one stage ("traced", "joint", "forward",
        "backward", "fused", "kernels")."""
        if self._last is None:
            raise RuntimeError(f"{self._name}: dump() before the first call")
        return self._last.compiled.dump(stage, dot)


def compile(fn=None, *, backend="auto", debug_dir=None, name=None, cache_limit=8,
            rematerialize=True, fullgraph=False, dynamic=None, mode=None):
    """Compile ``fn``; usable as ``kiln.compile(fn)``, ``@kiln.compile`` and
    ``@kiln.compile(backend="llvm", debug_dir="dumps")``. ``dynamic`` is torch.compile's: None
    (the default) compiles the first call with fixed sizes and makes a dim symbolic once a
    recompile shows its size changing (see ``kiln.mark_dynamic``), True makes every dim
    symbolic from the first call, False never does. ``fullgraph`` and ``mode`` are accepted for
    torch.compile compatibility; only their defaults are supported."""
    if fullgraph or mode not in (None, "default"):
        raise NotImplementedError("kiln.compile: fullgraph=True and mode= are not supported yet")
    if dynamic not in (None, True, False):
        raise TypeError(f"kiln.compile: dynamic must be None, True or False, got {dynamic!r}")

    def wrap(f):
        if not callable(f):
            raise TypeError(f"kiln.compile: expected a callable, got {type(f).__name__}")
        return CompiledFunction(f, backend, debug_dir, name, cache_limit, rematerialize, dynamic)

    return wrap if fn is None else wrap(fn)
