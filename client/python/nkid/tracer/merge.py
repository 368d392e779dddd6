"""Reshapes of HBM tensors that merge dimensions.

``t.reshape((N * C, H, W))`` of an HBM tensor ``t`` of shape (N, C, H, W) is
a view in NKI.  Its merged index ``i`` reaches ``t[i // C, i % C]``, which
is not affine in ``t``'s dimensions, so nkid cannot express it as a view:
it makes the reshape a new HBM tensor of the merged shape instead, filled
from ``t`` by a DMA at the reshape (when ``t`` may hold data) and copied
back into ``t`` at the end of the kernel when the kernel writes it.  Both
copies index the new tensor through a split of its shape, which is affine.

The copy stands for the view as long as the kernel uses one of the two
after the reshape: using both, with either written, is refused, as is a
merging reshape inside a loop or branch.  Under an SPMD grid every program
copies in and back; the programs run as if one after the other (HBM
tensors persist across them), so the copy still stands for the view.

NkiTensor.reshape reaches merged_view through nkitensor.emitters, which
this module fills when imported.
"""

from .._proto import nkir_pb2 as ir
from . import dynamic as _dyn
from .builder import Op, require
from .index import _reshape_map
from .nkitensor import NkiTensor, emitters, new_hbm

__all__ = ["merged_view", "write_back"]

_HBM = (ir.SPACE_HBM, ir.SPACE_SHARED_HBM)


def _copy(b, dst, src, loc):
    dacc, srcs, dyn, _ = _dyn.copy_operands(b, dst, src, None, False)
    op = b.emit(Op(ir.OP_DMA_COPY, loc, dacc, srcs, {"alu": ir.ALU_INVALID, "dyn": dyn}))
    b.note_write(dacc)
    return op


def _fine(a, b):
    """The shape both row-major shapes ``a`` and ``b`` split into (their
    dimension boundaries together), or None when a boundary of one cuts a
    dimension of the other unevenly ([6, 4] and [4, 6])."""
    cuts = set()
    for shape in (a, b):
        n = 1
        for d in reversed(shape):
            n *= int(d)
            cuts.add(n)
    fine, prev = [], 1
    for c in sorted(cuts):
        if c % prev:
            return None
        fine.append(c // prev)
        prev = c
    return tuple(reversed(fine))


def _split_both(t, v):
    """(t, v) as views of one shape, each a split of its own shape (both
    affine): v's shape when it splits t's, else their common refinement
    (a reshape [16, 4096] -> [32, 2048] copies through [16, 2, 2048])."""
    try:
        _reshape_map(t.shape, v.shape)
        return t.reshape(v.shape), v
    except NotImplementedError:
        fine = _fine(t.shape, v.shape)
        return t.reshape(fine), v.reshape(fine)


def merged_view(v, shape, err):
    """The reshape of HBM view ``v`` to ``shape`` (which merges dimensions)
    as a new HBM tensor; raises ``err`` when that cannot stand for it."""
    b = require("reshape")
    if v._space not in _HBM or type(v) is not NkiTensor:
        raise err
    if _fine(v.shape, shape) is None:
        raise err
    if len(b._bodies) > 1:
        raise NotImplementedError(
            "%s; nkid copies such a reshape of an HBM tensor, which it can only do"
            " outside loops and branches: reshape before the loop" % err.args[0]) from None
    loc = b.loc_here()
    info = b.tensors[v._tid]
    t = new_hbm(shape, v.dtype, v._space, v.name)
    start = len(b.body)
    ops = []
    if info.kind == ir.TENSOR_PARAM or info.written or info.fill != ir.FILL_UNINIT:
        ops.append(_copy(b, *_split_both(t, v), loc))
    b.merged.append((v, t, start, loc, ops))
    return t


def _walk(body, out):
    for op in body:
        if op.loop is not None:
            _walk(op.loop[5], out)
        elif op.branch is not None:
            _walk(op.branch[1], out)
            _walk(op.branch[2], out)
        else:
            out.append(op)
    return out


def _uses(ops, tid, skip):
    """(read, written): whether ops other than ``skip`` read or write tid."""
    read = written = False
    for op in ops:
        if id(op) in skip:
            continue
        if op.dst is not None and op.dst.tensor == tid:
            written = True
        for s in op.src:
            if getattr(s, "tensor", None) == tid:
                read = True
    return read, written


def write_back(b):
    """At the end of the trace: copy each written merged view back into
    the tensor it was made from; refuse what the copies cannot stand for."""
    for v, t, start, loc, ops in reversed(b.merged):   # a reshape of a reshape first
        after = _walk(b.body[start:], [])
        skip = {id(op) for op in ops}
        r_new, w_new = _uses(after, t._tid, skip)
        r_old, w_old = _uses(after, v._tid, skip)
        name = v.name or "tensor"
        where = "%s:%d" % (b.files[loc[0]].rsplit("/", 1)[-1], loc[1])
        if (w_new and (r_old or w_old)) or (w_old and r_new):
            raise NotImplementedError(
                "`%s` and its reshape (which merges dimensions) are both used after the"
                " reshape, and one is written; nkid makes such a reshape of an HBM tensor"
                " a copy: use only the reshaped view after it (%s)" % (name, where))
        if w_new:
            _copy(b, *reversed(_split_both(t, v)), loc)


emitters.merged_view = merged_view
