"""repr(tensor) in torch's format: ``tensor([[ 0.1000, -2.0000]], requires_grad=True)``."""

import math

from . import _C

_LINE_WIDTH = 80
_THRESHOLD = 1000  # more elements than this print summarized, edgeitems at each end
_EDGEITEMS = 3


def _values(t):
    return t.detach().cpu().reshape(-1).tolist() if t.numel() else []


class _Formatter:
    def __init__(self, t):
        self.floating = t.dtype.is_floating_point
        self.int_mode = True
        self.sci_mode = False
        vals = _values(t)
        finite = [abs(v) for v in vals if isinstance(v, float) and math.isfinite(v)]
        if self.floating:
            self.int_mode = all(v == math.floor(v) for v in finite)
            nonzero = [v for v in finite if v != 0]
            if nonzero:
                hi, lo = max(nonzero), min(nonzero)
                if self.int_mode:
                    self.sci_mode = hi > 1e8
                else:
                    self.sci_mode = hi / lo > 1000.0 or hi > 1e8 or lo < 1e-4
        self.width = max((len(self.format(v)) for v in vals), default=1)

    def format(self, v):
        if isinstance(v, bool):
            return str(v)
        if not self.floating:
            return str(v)
        if not math.isfinite(v):
            return str(v)
        if self.sci_mode:
            return f"{v:.4e}"
        if self.int_mode:
            return f"{v:.0f}."
        return f"{v:.4f}"

    def pad(self, v):
        return self.format(v).rjust(self.width)


def _summarized(t):
    return t.numel() > _THRESHOLD


def _format(t, fmt, indent, summarize):
    if t.dim() == 0:
        return fmt.pad(t.item())
    n = t.shape[0]
    if t.dim() == 1:
        if summarize and n > 2 * _EDGEITEMS:
            items = [fmt.pad(v) for v in t[:_EDGEITEMS].tolist()] + ["..."] + [
                fmt.pad(v) for v in t[n - _EDGEITEMS:].tolist()]
        else:
            items = [fmt.pad(v) for v in t.tolist()]
        per_line = max(1, (_LINE_WIDTH - indent) // (fmt.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    if summarize and n > 2 * _EDGEITEMS:
        rows = [_format(t[i], fmt, indent + 1, summarize) for i in range(_EDGEITEMS)] + ["..."] + [
            _format(t[i], fmt, indent + 1, summarize) for i in range(n - _EDGEITEMS, n)]
    else:
        rows = [_format(t[i], fmt, indent + 1, summarize) for i in range(n)]
    sep = "," + "\n" * (t.dim() - 1) + " " * (indent + 1)
    return "[" + sep.join(rows) + "]"


def _repr(self):
    prefix = "tensor("
    t = self.detach()
    suffixes = []
    if t.numel() == 0 and t.dim() != 1:
        body = "[]"
        suffixes.append(f"size={tuple(t.shape)}")
    else:
        body = _format(t, _Formatter(t), len(prefix), _summarized(t))
    if self.device.type != "cpu":
        suffixes.append(f"device='{self.device}'")
    if self.dtype not in (_C.float32, _C.int64, _C.bool):
        suffixes.append(f"dtype={self.dtype!r}")
    if self.grad_fn is not None:
        suffixes.append(f"grad_fn=<{self.grad_fn.name()}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")
    return prefix + body + "".join(", " + s for s in suffixes) + ")"


_C.Tensor.__repr__ = _repr
_C.Tensor.__str__ = _repr
