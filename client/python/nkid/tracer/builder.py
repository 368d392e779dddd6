"""The kernel builder: the state of one trace and its NKIR serialization.

A :class:`KernelBuilder` collects tensors and ops while a kernel function
runs with symbolic arguments; :meth:`KernelBuilder.finish` turns them into a
``nkir.v1.Kernel`` message (proto/nkir.proto).  The active builder is
thread-local (active.py): tracing is re-entrant per thread and independent
across threads.
"""

from .._proto import nkir_pb2 as ir
from ..errors import NKIError
from . import active as _active
from .active import current, require        # re-exported: tensor.py, nki/
from .affine import Aff
from .alloc import check_kernel
from .dtypes import to_ir
from .loc import caller_loc, loc_suffix     # re-exported: tensor.py, nki/

__all__ = ["KernelBuilder", "current", "require", "caller_loc", "loc_suffix",
           "Access", "Op"]

class Access:
    """A view: tensor id, per-dimension Aff over the view's axes, the
    iteration shape, and mask constraints (Aff >= 0)."""

    __slots__ = ("tensor", "index", "shape", "mask")

    def __init__(self, tensor, index, shape, mask=()):
        self.tensor = tensor
        self.index = list(index)
        self.shape = tuple(shape)
        self.mask = list(mask)


class Op:
    """One NKIR op under construction (fields as in nkir.v1.Op)."""

    __slots__ = ("kind", "loc", "dst", "src", "fields", "loop", "branch")

    def __init__(self, kind, loc, dst=None, src=(), fields=None, loop=None):
        self.kind = kind
        self.loc = loc
        self.dst = dst
        self.src = list(src)          # Access or float
        self.fields = fields or {}
        self.loop = loop              # (var, kind, start, stop, step, body)
        self.branch = None            # OP_IF: (conditions [Aff], then body, else body)


class TensorInfo:
    __slots__ = ("name", "kind", "space", "dtype", "shape", "loc", "fill",
                 "pending_alloc", "written", "data", "alloc", "scope", "blocks",
                 "bitcast", "view_of")

    def __init__(self, name, kind, space, dtype, shape, loc, fill=ir.FILL_UNINIT):
        self.name = name
        self.kind = kind
        self.space = space
        self.dtype = dtype
        self.shape = tuple(int(s) for s in shape)
        self.loc = loc
        self.fill = fill
        self.pending_alloc = None     # (op, body) of an OP_ALLOC FILL_UNINIT
        self.written = False
        self.data = None              # FILL_DATA: the constant's bytes
        self.alloc = None             # a direct allocation (tracer.alloc.Placement)
        self.scope = ()               # the loop variables open at creation
        self.blocks = 0               # tiles: block dimensions after the partitions
        self.bitcast = None           # tile.view(dtype): the viewed NkiTensor
        self.view_of = None           # HBM tensor.view(dtype): the viewed tensor's id


class KernelBuilder:
    """Collects the tensors and ops of one kernel trace."""

    def __init__(self, name, grid=(), target=""):
        self.name = name
        self.grid = tuple(int(g) for g in grid)
        self.cores = 1                # physical NeuronCores of the grid
        self.target = target
        self.files = []
        self._file_idx = {}
        self.tensors = []
        self.params = []
        self.outputs = []
        self.body = []
        self._bodies = [self.body]
        self._loops = []
        self.num_loop_vars = 0
        self.def_loc = None
        # ids of ops emitted right after another op as its part (an
        # accumulator read after nisa.activation): is_last_op looks past
        # them, so the result can still be written in place.
        self.companions = set()
        self.fns = []                 # index functions: (kind, Aff, divisor)
        self._fn_idx = {}
        self.force_auto_alloc = False  # nki.compiler.force_auto_alloc
        self.loop_reduce = {}         # nl.loop_reduce accumulators by call site
        self.merged = []              # HBM reshapes made copies (tracer.merge)
        # ids of the tensor-engine OP_TRANSPOSEs that are nc_matmul's
        # transpose mode (is_transpose=True on trn2): allowed in allocated
        # kernels, where nc_transpose on the tensor engine is not
        self.pe_transposes = set()
        # files the trace read (nl.shared_constant of a .npy path): such a
        # trace is not kept for the next call, which reads them again
        self.files_read = []

    # -- activation
    def __enter__(self):
        _active.push(self)
        return self

    def __exit__(self, *exc):
        _active.pop()
        return False

    # -- locations
    def file_index(self, path):
        i = self._file_idx.get(path)
        if i is None:
            i = self._file_idx[path] = len(self.files)
            self.files.append(path)
        return i

    def loc_here(self):
        """(file index, line) of the kernel line being traced."""
        path, line = caller_loc()
        return (self.file_index(path), line)

    # -- tensors
    def add_tensor(self, name, kind, space, dtype, shape, fill=ir.FILL_UNINIT, loc=None):
        if loc is None:
            loc = self.loc_here()
        t = TensorInfo(name, kind, space, dtype, shape, loc, fill)
        t.scope = tuple(lp[0] for lp in self._loops)
        self.tensors.append(t)
        return len(self.tensors) - 1

    # -- index functions
    def index_fn(self, kind, aff, divisor):
        """The index of the NKIR IndexFn ``aff % divisor`` (kind "mod") or
        ``aff // divisor`` ("floordiv"), added once."""
        key = (kind, aff.c, tuple(sorted(aff.t.items())), divisor)
        i = self._fn_idx.get(key)
        if i is None:
            i = self._fn_idx[key] = len(self.fns)
            self.fns.append((kind, aff.copy(), divisor))
        return i

    def add_param(self, name, dtype, shape):
        tid = self.add_tensor(name, ir.TENSOR_PARAM, ir.SPACE_HBM, dtype, shape,
                              loc=self.def_loc or (0, 0))
        self.params.append((name, tid))
        return tid

    def drop_tensor_if_last(self, tid):
        if tid == len(self.tensors) - 1:
            self.tensors.pop()

    # -- ops
    @property
    def cur_body(self):
        return self._bodies[-1]

    def emit(self, op):
        dst = op.dst if isinstance(op.dst, Access) else None
        if (dst is not None and self.tensors[dst.tensor].bitcast is not None
                and op.kind not in (ir.OP_BITCAST, ir.OP_ALLOC)):
            raise NKIError("writing through a tile.view(dtype) of another dtype is not"
                           " supported: nkid's view reads the viewed tile's bytes, write"
                           " the viewed tile instead" + loc_suffix())
        self._bodies[-1].append(op)
        return op

    def is_last_op(self, op):
        body = self._bodies[-1]
        i = len(body) - 1
        while i > 0 and id(body[i]) in self.companions:
            i -= 1
        return i >= 0 and body[i] is op

    def alloc(self, tid, fill, value=0.0, loc=None):
        """OP_ALLOC of a whole tile.  An uninitialized allocation is dropped
        again if the tile's first access overwrites all of it."""
        t = self.tensors[tid]
        acc = full_access(tid, t.shape)
        fields = {"fill": fill}
        if fill == ir.FILL_VALUE:
            fields["value"] = float(value)
        op = self.emit(Op(ir.OP_ALLOC, loc or self.loc_here(), acc, (), fields))
        if fill == ir.FILL_UNINIT:
            t.pending_alloc = (op, self._bodies[-1])
        return op

    def note_read(self, acc):
        t = self.tensors[acc.tensor]
        t.pending_alloc = None

    def note_write(self, acc):
        t = self.tensors[acc.tensor]
        t.written = True
        p = t.pending_alloc
        if p is not None:
            t.pending_alloc = None
            if covers(acc, t.shape):
                op, body = p
                for i in range(len(body) - 1, -1, -1):
                    if body[i] is op:
                        del body[i]
                        break

    # -- loops
    def loop_body(self, var):
        """The body that holds the loop over ``var`` (being traced), or
        None if ``var`` is not an open loop."""
        for lp in self._loops:
            if lp[0] == var:
                return lp[7]
        return None

    def begin_loop(self, kind, start, stop, step, loc=None):
        var = self.num_loop_vars
        self.num_loop_vars += 1
        body = []
        self._loops.append((var, kind, start, stop, step, body, loc or self.loc_here(),
                            self._bodies[-1]))
        self._bodies.append(body)
        return var

    def end_loop(self, var):
        if not self._loops or self._loops[-1][0] != var:
            return          # abandoned trace (an exception left the loop)
        var, kind, start, stop, step, body, loc, _ = self._loops.pop()
        self._bodies.pop()
        self.emit(Op(ir.OP_LOOP, loc, loop=(var, kind, start, stop, step, body)))

    # -- if on loop indices
    def begin_branch(self, conds, loc=None):
        """Trace the then-side of an OP_IF on ``conds`` (Affs, all >= 0):
        the op, which end_branch places in the current body."""
        op = Op(ir.OP_IF, loc or self.loc_here())
        op.branch = (list(conds), [], [])
        self._bodies.append(op.branch[1])
        return op

    def begin_else(self, op):
        self._bodies.append(op.branch[2])

    def end_branch(self, op, side):
        """End the then-side (side 1: the op goes into the body around it)
        or the else-side (side 2) of op."""
        if len(self._bodies) < 2 or self._bodies[-1] is not op.branch[side]:
            return          # abandoned trace
        self._bodies.pop()
        if side == 1:
            self.emit(op)

    # -- serialization
    def finish(self):
        """The traced kernel as a nkir.v1.Kernel message."""
        check_kernel(self)
        k = ir.Kernel(name=self.name, files=self.files, grid=list(self.grid),
                      num_loop_vars=self.num_loop_vars, target=self.target,
                      cores=self.cores if self.cores > 1 else 0)
        if self.def_loc:
            k.loc.file, k.loc.line = self.def_loc
        for t in self.tensors:
            m = k.tensors.add(name=t.name, kind=t.kind, space=t.space,
                              dtype=to_ir(t.dtype), shape=list(t.shape))
            m.loc.file, m.loc.line = t.loc
            if t.kind == ir.TENSOR_HBM:
                m.fill = t.fill
            if t.data is not None:
                m.data = t.data
            if t.blocks:
                m.block_dims = t.blocks
            if t.view_of is not None:
                m.view_of = t.view_of + 1
        for kind, aff, divisor in self.fns:
            f = k.fns.add(kind=ir.FN_MOD if kind == "mod" else ir.FN_FLOORDIV,
                          divisor=divisor)
            _aff_to_pb(aff, f.expr)
        for name, tid in self.params:
            k.params.add(name=name, tensor=tid)
        k.outputs.extend(self.outputs)
        _ops_to_pb(self.body, k.body)
        return k


def full_access(tid, shape, mask=()):
    return Access(tid, [Aff.axis(j) for j in range(len(shape))], shape, mask)


def covers(acc, shape):
    """True if ``acc`` writes every element of a tensor of ``shape``."""
    if acc.mask or len(acc.index) != len(shape):
        return False
    n = 1
    for s in acc.shape:
        n *= s
    total = 1
    for s in shape:
        total *= s
    if n != total:
        return False
    seen = set()
    for d, a in enumerate(acc.index):
        if a.c != 0 or len(a.t) != 1:
            return shape[d] == 1 and a.c == 0 and not a.t
        (k, v), = a.t.items()
        if not isinstance(k, int) or v != 1 or k in seen or acc.shape[k] != shape[d]:
            return False
        seen.add(k)
    return True


_TERM = {"l": ir.TERM_LOOP, "p": ir.TERM_PROGRAM, "f": ir.TERM_FN}


def _aff_to_pb(a, m):
    m.constant = a.c
    items = []
    for key, coef in a.t.items():
        if isinstance(key, int):
            items.append((ir.TERM_AXIS, key, coef))
        else:
            items.append((_TERM[key[0]], key[1], coef))
    items.sort()
    for kind, index, coef in items:
        m.terms.add(kind=kind, index=index, coef=coef)


def _access_to_pb(acc, m):
    m.tensor = acc.tensor
    for a in acc.index:
        _aff_to_pb(a, m.index.add())
    m.shape.extend(acc.shape)
    for a in acc.mask:
        _aff_to_pb(a, m.mask.add())


def _ops_to_pb(ops, out):
    for op in ops:
        m = out.add(kind=op.kind)
        m.loc.file, m.loc.line = op.loc
        if op.dst is not None:
            _access_to_pb(op.dst, m.dst)
        for s in op.src:
            o = m.src.add()
            if isinstance(s, Access):
                _access_to_pb(s, o.access)
            else:
                o.scalar = float(s)
        for name, value in op.fields.items():
            if name == "axes":
                m.axes.extend(value)
            elif name == "expr":
                _aff_to_pb(value, m.expr)
            elif name == "dyn":             # nki.isa run-time indices
                for d in value:
                    m.dyn.add(**d)
            elif name.startswith("_"):
                continue            # the tracer's own notes
            elif isinstance(value, (list, tuple)):
                getattr(m, name).extend(value)
            else:
                setattr(m, name, value)
        if op.loop is not None:
            var, kind, start, stop, step, body = op.loop
            lp = m.loop
            lp.var, lp.kind, lp.start, lp.stop, lp.step = var, kind, start, stop, step
            _ops_to_pb(body, lp.body)
        if op.branch is not None:
            conds, then_body, else_body = op.branch
            for a in conds:
                _aff_to_pb(a, m.branch.cond.add())
            _ops_to_pb(then_body, m.branch.then_body)
            _ops_to_pb(else_body, m.branch.else_body)
            m.branch.SetInParent()
