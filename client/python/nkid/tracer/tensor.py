"""The op emitters of traced tensors: element-wise arithmetic, activation,
reduction, matmul, transpose, copy, load and store, select, and
assignment into a view (a fresh tile assigned at once is not materialized:
its producing op is retargeted to write the destination).

NkiTensor (nkitensor.py) and its views are the values; this module records
the NKIR ops a kernel makes of them, and fills nkitensor.emitters, so that
a tensor's operators (``a + b``, ``t[...] = v``, ``x += y``) emit here.
The names the front door (nkid.nki) takes from ``tracer.tensor`` are
re-exported from the modules below.
"""

import numpy as np

from .._proto import nkir_pb2 as ir
from . import dtypes as _dt
from . import indirect as _indirect
from .affine import Aff, IndexExpr
from .builder import Access, Op, require
from .dynamic import DynTensor
from .emit import _as_tile, _dtype_of, _operand, _result, _shape, fill, iota_tile
from .index import _index, _reshape_map, broadcast_tiles, mask_affs, op_shape  # noqa: F401
from .nkitensor import (_ON_CHIP, Buffer, NkiTensor, ParDim, _err, _guess_name,
                        emitters, hbm, is_scalar, is_tensor, new_hbm, new_param,
                        new_tile, private_hbm, psum, sbuf, shared_hbm)

__all__ = ["NkiTensor", "Buffer", "ParDim", "sbuf", "psum", "hbm", "shared_hbm",
           "private_hbm", "new_tile", "new_param", "new_hbm", "tensor_tensor",
           "activation", "reduce", "matmul", "transpose", "copy", "load", "store",
           "select", "is_tensor", "is_scalar", "mask_affs", "op_shape", "iota_tile",
           "fill", "assign", "inplace"]


def tensor_tensor(x, y, alu, dtype=None, mask=None):
    """Element-wise ``x alu y``; either may be a scalar."""
    b = require("element-wise operations")
    sx, sy = _shape(x), _shape(y)
    if sx is None and sy is None:
        raise _err("an element-wise NKI operation needs at least one tile operand", TypeError)
    shape = broadcast_tiles(sx, sy, operands=(x, y))
    oshape = op_shape(shape)
    if dtype is None:
        dx, dy = _dtype_of(x), _dtype_of(y)
        if dx is not None and dy is not None:
            dtype = _dt.promote(dx, dy)
        elif dx is not None:
            dtype = _dt.promote_scalar(dx, y)
        else:
            dtype = _dt.promote_scalar(dy, x)
    ma = mask_affs(mask, oshape)
    srcs = [_operand(b, x, oshape, ma), _operand(b, y, oshape, ma)]
    return _result(b, ir.OP_TENSOR_TENSOR, shape, dtype, srcs, {"alu": alu}, ma)


def activation(x, act, dtype=None, mask=None, scale=1.0, bias=None):
    """``act(x * scale + bias)``."""
    b = require("activation functions")
    if not isinstance(x, NkiTensor):
        x = _as_tile(x)
    shape = x.shape
    oshape = op_shape(shape)
    ma = mask_affs(mask, oshape)
    if isinstance(scale, (NkiTensor, IndexExpr)):
        x = tensor_tensor(x, scale, ir.ALU_MULTIPLY, mask=mask)
        scale = 1.0
    srcs = [_operand(b, x, oshape, ma)]
    if bias is not None:
        srcs.append(_operand(b, bias, oshape, ma))
    return _result(b, ir.OP_ACTIVATION, shape, _dt.normalize(dtype) if dtype else x.dtype,
                   srcs, {"act": act, "scale": float(scale)}, ma)


def _axes(axis, rank):
    if isinstance(axis, (list, tuple)):
        axes = [int(a) for a in axis]
    else:
        axes = [int(axis)]
    axes = sorted(set(a + rank if a < 0 else a for a in axes))
    for a in axes:
        if not 0 <= a < rank:
            raise _err("reduction axis %d is out of range for a tile of rank %d"
                       % (a, rank), ValueError)
    return axes


def reduce(x, alu, axis, dtype=None, mask=None, keepdims=False):
    """Reduce ``x`` along ``axis`` with ``alu`` (add, maximum, mean, ...)."""
    b = require("reductions")
    if not isinstance(x, NkiTensor):
        x = _as_tile(x)
    axes = _axes(axis, len(x.shape))
    kshape = tuple(1 if j in axes else n for j, n in enumerate(x.shape))
    ma = mask_affs(mask, x.shape)
    src = _operand(b, x, None, ma)
    if keepdims:
        lshape = kshape
        m = {j: Aff.axis(j) for j in range(len(kshape))}
    else:
        kept = [j for j in range(len(x.shape)) if j not in axes]
        lshape = tuple(x.shape[j] for j in kept)
        m = {i: Aff.axis(j) for i, j in enumerate(kept)}
    loc = b.loc_here()
    t = new_tile(lshape, _dt.normalize(dtype) if dtype else x.dtype, ir.SPACE_SBUF,
                 _guess_name(), loc=loc)
    dmask = [a for a in ma if not any(k in axes for k in a.axes())]
    dst = Access(t._tid, [a.subst(m) for a in t._imap], kshape, dmask)
    op = b.emit(Op(ir.OP_REDUCE, loc, dst, [src],
                   {"alu": alu, "axes": axes, "acc_dtype": ir.DT_FLOAT32}))
    t._producer = op
    return t


def matmul(x, y, transpose_x=False, mask=None, engine=ir.ENGINE_DEFAULT):
    """PSUM fp32 [M, N] = x @ y (x given [M, K]) or x.T @ y (x given [K, M])."""
    b = require("matmul")
    if len(x.shape) != 2 or len(y.shape) != 2:
        raise _err("matmul operands must be 2-D tiles, got %s and %s"
                   % (list(x.shape), list(y.shape)), ValueError)
    m = x.shape[1] if transpose_x else x.shape[0]
    n = y.shape[1]
    shape = (m, n)
    ma = mask_affs(mask, shape)
    srcs = []
    for t, free, out_axis in ((x, 1 if transpose_x else 0, 0), (y, 1, 1)):
        # operand masking (NKI's "lhs_T[i_lhs_f <= 64]"): the operand's
        # masked-off elements are not read (they count as 0 in the sum); a
        # constraint on its free axis alone also masks that output axis
        acc = t._access(None, list(t._omask)) if isinstance(t, NkiTensor) \
            else _operand(b, t, None, ())
        if isinstance(t, NkiTensor):
            b.note_read(acc)
            for a in t._omask:
                if a.axes() == [free]:
                    ma.append(a.subst({free: Aff.axis(out_axis)}))
        srcs.append(acc)
    fields = {"transpose_x": bool(transpose_x), "acc_dtype": ir.DT_FLOAT32}
    if engine:
        fields["engine"] = engine
    return _result(b, ir.OP_MATMUL, shape, _dt.float32, srcs, fields, ma, ir.SPACE_PSUM)


def transpose(x, dtype=None, mask=None, engine=ir.ENGINE_DEFAULT, space=ir.SPACE_SBUF):
    """dst [F, P] <- x [P, F]."""
    b = require("transpose")
    if len(x.shape) != 2:
        raise _err("transpose needs a 2-D tile, got %s" % list(x.shape), ValueError)
    shape = (x.shape[1], x.shape[0])
    srcs = [_operand(b, x, None, ())]
    fields = {"engine": engine} if engine else {}
    return _result(b, ir.OP_TRANSPOSE, shape, _dt.normalize(dtype) if dtype else x.dtype,
                   srcs, fields, mask_affs(mask, shape), space)


def copy(x, dtype=None, mask=None, engine=ir.ENGINE_DEFAULT):
    """A new SBUF tile with the values of ``x`` (cast to ``dtype``)."""
    b = require("nl.copy")
    if not isinstance(x, NkiTensor):
        x = _as_tile(x)
    ma = mask_affs(mask, op_shape(x.shape))
    fields = {"engine": engine} if engine else {}
    return _result(b, ir.OP_COPY, x.shape, _dt.normalize(dtype) if dtype else x.dtype,
                   [_operand(b, x, op_shape(x.shape), ma)], fields, ma)


def load(src, dtype=None, mask=None):
    """HBM -> a new SBUF tile."""
    b = require("nl.load")
    if not isinstance(src, NkiTensor):
        raise _err("nl.load expects a tensor in HBM, got %r" % (src,), TypeError)
    if isinstance(src, DynTensor):
        return _indirect.load(src, dtype=dtype, mask=mask)
    if not src.shape:
        # x[b, h] of an HBM tensor: one element, loaded as a [1, 1] tile
        src = NkiTensor(src._tid, (1, 1), src.dtype, src._imap, src._space, src.name)
    ma = mask_affs(mask, op_shape(src.shape))
    return _result(b, ir.OP_LOAD, src.shape, _dt.normalize(dtype) if dtype else src.dtype,
                   [_operand(b, src, op_shape(src.shape), ma)], {}, ma)


def store(dst, value, mask=None):
    """SBUF/PSUM value -> HBM dst."""
    b = require("nl.store")
    if not isinstance(dst, NkiTensor):
        raise _err("nl.store expects a destination tensor in HBM, got %r" % (dst,), TypeError)
    if isinstance(dst, DynTensor):
        return _indirect.store(dst, value, mask=mask)
    if not dst.shape:
        # out[b, h] of an HBM tensor: one element, stored as a [1, 1] tile
        # (NKI's reference flash attention backward stores a partition
        # reduction's [1] result so), as nl.load loads it
        dst = NkiTensor(dst._tid, (1, 1), dst.dtype, dst._imap, dst._space, dst.name)
    ma = mask_affs(mask, dst.shape)
    d = dst._access(None, ma)
    src = _operand(b, value, dst.shape, ma)
    b.emit(Op(ir.OP_STORE, b.loc_here(), d, [src]))
    b.note_write(d)


def select(cond, x, y, dtype=None, mask=None):
    """``cond != 0 ? x : y`` element-wise."""
    b = require("nl.where")
    shape = broadcast_tiles(_shape(cond), _shape(x), _shape(y), operands=(cond, x, y))
    oshape = op_shape(shape)
    if dtype is None:
        dx, dy = _dtype_of(x), _dtype_of(y)
        dtype = (_dt.promote(dx, dy) if dx is not None and dy is not None
                 else dx or dy or _dt.float32)
    ma = mask_affs(mask, oshape)
    srcs = [_operand(b, v, oshape, ma) for v in (cond, x, y)]
    return _result(b, ir.OP_SELECT, shape, dtype, srcs, {}, ma)


def _retarget(b, value, view, accumulate=False):
    """Make the op that produced the fresh tile ``value`` write ``view``."""
    op = value._producer
    old = op.dst.tensor
    dst = view._access(op.dst.shape, op.dst.mask)
    op.dst = dst
    for i in op.fields.get("_dst_srcs", ()):
        op.src[i] = dst         # nl.loop_reduce: the destination is an input
        b.note_read(dst)
    undo = op.fields.get("_undo")
    if undo is not None:
        undo()
    if accumulate:
        op.fields["accumulate"] = True
        t = b.tensors[dst.tensor]
        if t.pending_alloc is not None and view._space == ir.SPACE_PSUM:
            # the first access since the tile's uninitialized allocation
            # starts an accumulation group: on the device the group's
            # first matmul overwrites, so the tile starts at zero
            t.pending_alloc[0].fields["fill"] = ir.FILL_ZERO
            t.pending_alloc[0].fields["_acc_group"] = True
        b.note_read(dst)
    b.note_write(dst)
    b.drop_tensor_if_last(old)
    value._tid, value._imap, value._space = view._tid, view._imap, view._space
    value.dtype, value.name = view.dtype, view.name
    value._producer = None


_ELEMENTWISE = (ir.OP_TENSOR_TENSOR, ir.OP_ACTIVATION, ir.OP_COPY, ir.OP_SELECT,
                ir.OP_ISA_DROPOUT)


def _no_overlap(op, view):
    """True if making ``op`` write ``view`` cannot change what it reads:
    it reads ``view``'s tensor only element-wise at the very same indices."""
    dst = view._access(op.dst.shape)
    for s in op.src:
        if isinstance(s, Access) and s.tensor == dst.tensor:
            if op.kind not in _ELEMENTWISE or s.shape != dst.shape or s.index != dst.index:
                return False
    return True


_RETARGET_SPACES = {ir.OP_LOAD: (ir.SPACE_SBUF,), ir.OP_MATMUL: (ir.SPACE_PSUM,),
                    ir.OP_DMA_COPY: (ir.SPACE_SBUF,)}


def assign(view, value, mask=None):
    """``view[...] = value``."""
    b = require("tensor assignment")
    if not view.shape and not any(a.axes() for a in view._imap):
        # t[i, j] = ...: one element, written as a [1, 1] tile
        view = NkiTensor(view._tid, (1, 1), view.dtype, view._imap, view._space, view.name)
    if isinstance(value, DynTensor) or isinstance(view, DynTensor):
        return _indirect.assign(view, value, mask)
    if isinstance(value, NkiTensor):
        p = value._producer
        if (p is not None and b.is_last_op(p) and value.shape == view.shape
                and view._space in _RETARGET_SPACES.get(p.kind, _ON_CHIP) and mask is None
                and _no_overlap(p, view)):
            _retarget(b, value, view)
            return
        ma = mask_affs(mask, view.shape)
        if (not ma and p is not None and p.dst is not None and p.dst.mask
                and p.dst.shape == view.shape):
            # the fresh tile of a masked op holds only what its mask
            # selected: copy those elements only (t[...] = op(.., mask=m))
            ma = list(p.dst.mask)
        if view._space in _ON_CHIP:
            kind = ir.OP_LOAD if value._space not in _ON_CHIP else ir.OP_COPY
        elif value._space in _ON_CHIP:
            kind = ir.OP_STORE
        else:
            raise _err("cannot assign an HBM tensor to an HBM tensor; load it into"
                       " a tile and store the tile", TypeError)
        d = view._access(None, ma)
        src = _operand(b, value, view.shape, ma)
        b.emit(Op(kind, b.loc_here(), d, [src]))
        b.note_write(d)
        return
    if isinstance(value, IndexExpr):
        value = iota_tile(value, view.dtype)
        return assign(view, value, mask)
    if is_scalar(value):
        return fill(view, value, mask)
    if isinstance(value, np.ndarray):
        raise _err("cannot assign a host numpy array inside a kernel", TypeError)
    raise _err("cannot assign %r to a NKI tensor" % (value,), TypeError)


def inplace(self, o, alu):
    """``self alu= o``: writes ``self`` (and ``psum += matmul(...)`` makes the
    matmul accumulate into it)."""
    b = require("in-place arithmetic")
    p = getattr(o, "_producer", None)
    if (alu == ir.ALU_ADD and p is not None and p.kind == ir.OP_MATMUL
            and b.is_last_op(p) and self._space == ir.SPACE_PSUM
            and o.shape == self.shape and not p.fields.get("accumulate")):
        _retarget(b, o, self, accumulate=True)
    else:
        dst = self._access()
        src = [self._access(), _operand(b, o, self.shape, ())]
        b.note_read(dst)
        b.emit(Op(ir.OP_TENSOR_TENSOR, b.loc_here(), dst, src, {"alu": alu}))
        b.note_write(dst)
    self._inplace = True
    return self


emitters.tensor_tensor = tensor_tensor
emitters.activation = activation
emitters.copy = copy
emitters.assign = assign
emitters.inplace = inplace
