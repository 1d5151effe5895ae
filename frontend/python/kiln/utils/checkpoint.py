"""Activation checkpointing (torch.utils.checkpoint.checkpoint): run ``function`` without
keeping its intermediate tensors; backward runs it again, with the same random stream, and
differentiates that. Arguments and results may mix tensors with other values."""

from .. import _C, _tree


def checkpoint(function, *args, use_reentrant=None, preserve_rng_state=True, **kwargs):
    if not preserve_rng_state:
        raise NotImplementedError("checkpoint(preserve_rng_state=False) is not supported")
    tensors, spec = _tree.flatten((args, kwargs))
    out_spec = []

    def run(flat):
        a, kw = _tree.unflatten(spec, flat)
        out = function(*a, **kw)
        flat_out, s = _tree.flatten(out)
        if not out_spec:
            out_spec.append(s)
        return flat_out

    flat_out = _C._checkpoint(run, tensors)
    return _tree.unflatten(out_spec[0], flat_out)
