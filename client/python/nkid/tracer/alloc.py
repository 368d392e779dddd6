"""Direct allocation: ``nki.compiler.sbuf.alloc/mod_alloc`` and the PSUM
forms place each logical tile of a tensor in SBUF or PSUM; this module
computes the placement as NKI does and checks it the way NKI's compiler
does, before anything runs.

A tensor ``(B..., par_dim(P), F...)`` has ``prod(B)`` logical tiles of
``P`` partitions and ``prod(F) * itemsize`` bytes per partition
(``fdim_size``).  The allocation function maps a block index to
``(start_partition, byte_addr)`` in SBUF or ``(bank_id, start_partition,
byte_addr)`` in PSUM.  Checked at the tensor's creation: the ISA's
start-partition rules, SBUF addresses within the partition minus the
compiler's 16 KiB, PSUM banks 0-7 of 2 KiB, tiles of one tensor either
shared (modulo allocation) or disjoint.  Checked when the trace ends
(:func:`check_kernel`): two logical tiles on overlapping physical memory
may not be alive at the same time in program order (NKI's lifetime
conflict: of two tensors, or of one tensor whose modulo allocation has too
few physical tiles), allocated kernels declare no HBM tensor besides their
outputs and constants, and transpose on the Tensor Engine needs an
identity of the kernel's own.  A logical tile is alive from a write to its
last read before the next write that replaces all of it; the check follows
the kernel's loops as they execute, up to MAX_EVENTS, and past that applies
the coarse rule to whole tensors (first to last use, through the loops).

nkid executes every tensor in memory of its own, so a lifetime conflict
can never change a result here; it is refused because it would on the
device.  Tiles the kernel leaves to automatic allocation (every op result
not assigned into an allocated tensor) are accepted.
"""

import itertools
import os

from .._proto import nkir_pb2 as ir
from ..errors import NKIError
from .affine import Aff
from .loc import loc_suffix

__all__ = ["OnBuffer", "AllocBuffer", "Placement", "place", "check_kernel",
           "sbuf_usable", "PSUM_BANKS", "PSUM_BANK_BYTES"]

#: SBUF bytes per partition by target; 16 KiB of each is the compiler's.
SBUF_BYTES = {"trn2": 224 * 1024, "trn3": 256 * 1024}
SBUF_DEFAULT = 192 * 1024
SBUF_RESERVED = 16 * 1024
PSUM_BANKS = 8
PSUM_BANK_BYTES = 2048
#: Most logical tiles one allocated tensor may have (nkid's bound).
MAX_BLOCKS = 65536


def sbuf_usable(target):
    """Bytes of an SBUF partition that direct allocation may use."""
    return SBUF_BYTES.get(target or "", SBUF_DEFAULT) - SBUF_RESERVED


def _err(msg, cls=NKIError):
    return cls(msg + loc_suffix())


class OnBuffer:
    """What stands for one memory's ``buffer`` (a tracer.tensor.Buffer:
    sbuf or psum) and has its ``name`` and ``space``."""

    @property
    def name(self):
        return self.buffer.name

    @property
    def space(self):
        return self.buffer.space


class AllocBuffer(OnBuffer):
    """A ``buffer=`` value that places a tensor's tiles itself: what
    ``ncc.sbuf.alloc(func)`` and ``ncc.sbuf.mod_alloc(...)`` (and the PSUM
    forms) return.  ``func(idx, pdim_size, fdim_size)`` gives a tile's
    location."""

    def __init__(self, buffer, func, what):
        self.buffer = buffer          # tracer.tensor.Buffer: sbuf or psum
        self.func = func
        self.what = what              # "ncc.sbuf.mod_alloc(base_addr=0)", for messages

    def __repr__(self):
        return self.what


class Placement:
    """Where an allocated tensor's tiles are: the distinct physical tiles as
    ``(bank, p0, p1, a0, a1)`` (partitions [p0, p1), bytes [a0, a1); bank
    -1 in SBUF)."""

    __slots__ = ("space", "rects", "what", "tile")

    def __init__(self, space, rects, what, tile=None):
        self.space = space
        self.rects = rects
        self.what = what
        self.tile = tile or {}        # logical tile (block index) -> index in rects


def _ints(r, n):
    if not isinstance(r, (tuple, list)) or len(r) != n:
        return None
    try:
        return tuple(int(x) for x in r)
    except (TypeError, ValueError):
        return None


def _start_ok(p0, P):
    if P > 64:
        return p0 == 0, "0"
    if P > 32:
        return p0 in (0, 64), "0 or 64"
    return p0 in (0, 32, 64, 96), "one of 0/32/64/96"


def _fmt(r):
    bank, p0, p1, a0, a1 = r
    s = "partitions [%d, %d), bytes [%d, %d)" % (p0, p1, a0, a1)
    return s if bank < 0 else "bank %d, %s" % (bank, s)


def _overlap(x, y):
    return (x[0] == y[0] and x[1] < y[2] and y[1] < x[2] and x[3] < y[4]
            and y[3] < x[4])


def place(buf, shape, par, itemsize, name, target):
    """The Placement of a tensor of ``shape`` (partition dimension ``par``)
    allocated by ``buf``; NKIError when NKI's compiler would refuse it."""
    blocks, P, F = shape[:par], shape[par], shape[par + 1:]
    fdim = itemsize
    for n in F:
        fdim *= n
    nblocks = 1
    for n in blocks:
        nblocks *= n
    if nblocks > MAX_BLOCKS:
        raise _err("tensor `%s` has %d logical tiles; nkid places at most %d"
                   % (name, nblocks, MAX_BLOCKS))
    psum = buf.space == ir.SPACE_PSUM
    if psum and fdim > PSUM_BANK_BYTES:
        raise _err("fdim_size %d of tensor `%s` exceeds 2KiB, which is the size of a"
                   " single PSUM bank per partition: a physical PSUM tile cannot span"
                   " multiple PSUM banks" % (fdim, name))
    usable = sbuf_usable(target)
    rects, tile, at = [], {}, {}
    for idx in itertools.product(*[range(n) for n in blocks]):
        try:
            # by keyword, as NKI calls it (functools.partial(f, bank_map=...))
            got = buf.func(idx=tuple(idx), pdim_size=P, fdim_size=fdim)
        except (ValueError, TypeError, IndexError) as e:
            raise _err("%s for tensor `%s`: %s" % (buf.what, name, e), type(e)) from None
        r = _ints(got, 3 if psum else 2)
        if r is None:
            raise _err("the allocation function of %s must return %s, got %r for"
                       " logical tile %r of tensor `%s`"
                       % (buf.what, "(bank_id, start_partition, byte_addr)" if psum
                          else "(start_partition, byte_addr)", got, tuple(idx), name),
                       TypeError)
        if psum:
            bank, p0, a0 = r
            if not 0 <= bank < PSUM_BANKS:
                raise _err("PSUM bank_id %d of logical tile %r of tensor `%s` is out of"
                           " range: PSUM has %d banks (0-%d)"
                           % (bank, tuple(idx), name, PSUM_BANKS, PSUM_BANKS - 1))
            if p0 != 0 or a0 != 0:
                raise _err("start_partition (%d) and byte_addr (%d) of a PSUM tile must"
                           " both be 0 in the current release (tensor `%s`)"
                           % (p0, a0, name))
        else:
            bank = -1
            p0, a0 = r
            ok, want = _start_ok(p0, P)
            if not ok:
                raise _err("start_partition %d of logical tile %r of tensor `%s` is"
                           " invalid for a tile of %d partitions: must be %s"
                           % (p0, tuple(idx), name, P, want))
            if a0 < 0 or a0 + fdim > usable:
                raise _err("SBUF allocation of logical tile %r of tensor `%s` at byte_addr"
                           " %d with %d bytes per partition exceeds the %d bytes of an"
                           " SBUF partition available to allocation (%d KiB minus %d KiB"
                           " for compiler internal usage)"
                           % (tuple(idx), name, a0, fdim, usable,
                              (usable + SBUF_RESERVED) // 1024, SBUF_RESERVED // 1024))
        rect = (bank, p0, p0 + P, a0, a0 + fdim)
        if rect in at:
            tile[tuple(idx)] = at[rect]
            continue            # logical tiles sharing a physical tile
        for o in rects:
            if _overlap(o, rect):
                raise _err("physical tiles of tensor `%s` partially overlap: %s and %s"
                           % (name, _fmt(o), _fmt(rect)))
        tile[tuple(idx)] = at[rect] = len(rects)
        rects.append(rect)
    return Placement(buf.space, rects, buf.what, tile)


# ---------------------------------------------------------------- the kernel

def _at(b, loc):
    if not loc or loc[0] >= len(b.files):
        return ""
    return " (%s:%d)" % (os.path.basename(b.files[loc[0]]), loc[1])


def _uses(b):
    """Per tensor, its uses as (position, open loop vars); per loop var, its
    span [first, last] of positions; and every op with its position."""
    uses, spans, ops = {}, {}, []
    pos = [0]

    def note(acc, p, open_):
        if acc is not None and not isinstance(acc, float):
            uses.setdefault(acc.tensor, []).append((p, open_))

    def walk(body, open_):
        for op in body:
            if op.loop is not None:
                var = op.loop[0]
                first = pos[0]
                walk(op.loop[5], open_ + (var,))
                spans[var] = (first, max(first, pos[0] - 1))
                continue
            if op.branch is not None:       # either side may run: both count
                walk(op.branch[1], open_)
                walk(op.branch[2], open_)
                continue
            p = pos[0]
            pos[0] += 1
            ops.append((p, op))
            note(op.dst, p, open_)
            for s in op.src:
                note(s, p, open_)
    walk(b.body, ())
    return uses, spans, ops


def _live(t, tuses, spans):
    lo = min(p for p, _ in tuses)
    hi = max(p for p, _ in tuses)
    for _, open_ in tuses:
        for var in open_:
            if var not in t.scope and var in spans:
                # declared outside this loop, used in it: alive through it
                lo = min(lo, spans[var][0])
                hi = max(hi, spans[var][1])
    return lo, hi


def check_kernel(b):
    """The whole-kernel rules of direct allocation (a no-op for kernels
    without it, or under nki.compiler.force_auto_alloc)."""
    allocated = [i for i, t in enumerate(b.tensors) if t.alloc is not None]
    if not allocated or b.force_auto_alloc:
        return
    uses, spans, ops = _uses(b)
    for _, op in ops:
        if (op.kind == ir.OP_MATMUL and not op.fields.get("transpose_x")) or \
                (op.kind == ir.OP_TRANSPOSE and op.fields.get("engine") == ir.ENGINE_TENSOR
                 and id(op) not in b.pe_transposes):
            raise NKIError("Unsupported transpose case in allocated NKI kernels:"
                           " nisa.nc_transpose() with TensorEngine, or nl.matmul() without"
                           " setting transpose_x=True; use an allocated identity matrix"
                           " and nisa.nc_matmul()."
                           " (err_transpose_on_tensor_engine_not_allowed_in_allocated_kernel)"
                           + _at(b, op.loc))
    extra = [t.name or "#%d" % i for i, t in enumerate(b.tensors)
             if t.kind == ir.TENSOR_HBM and t.data is None and i not in b.outputs
             and t.view_of is None
             and i in uses]
    if extra:
        raise NKIError("Non IO HBM tensor is not supported in allocated NKI kernel: %s"
                       % ", ".join(extra) + _at(b, b.def_loc))
    if not _check_tiles(b, allocated):
        _check_tensors(b, allocated, uses, spans)


def _conflict(b, ti, x, tj, y):
    return NKIError("allocation of tensor `%s` (%s, %s) overlaps tensor `%s` (%s, %s) while"
                    " both are alive: physical tiles that must be alive at the same time need"
                    " unique addresses (lifetime conflict)"
                    % (ti.name, ti.alloc.what, _fmt(x), tj.name, tj.alloc.what, _fmt(y))
                    + _at(b, ti.loc))


def _check_tensors(b, allocated, uses, spans):
    """The coarse rule, for kernels too long to follow tile by tile: two
    allocated tensors alive at the same time (first to last use, through
    every loop using a tensor declared outside it) may not overlap."""
    live = {i: _live(b.tensors[i], uses[i], spans) for i in allocated if i in uses}
    order = sorted(live, key=lambda i: live[i])
    for n, i in enumerate(order):
        ti, (lo, hi) = b.tensors[i], live[i]
        for j in order[:n]:
            tj, (lo2, hi2) = b.tensors[j], live[j]
            if hi2 < lo or hi < lo2 or ti.alloc.space != tj.alloc.space:
                continue
            for x in ti.alloc.rects:
                for y in tj.alloc.rects:
                    if _overlap(x, y):
                        raise _conflict(b, ti, x, tj, y)


#: Most (op execution, logical tile) events the tile-level check follows
#: (about a second of tracing).
MAX_EVENTS = 1 << 17


class _TooLong(Exception):
    pass


def _check_tiles(b, allocated):
    """NKI's lifetime rule, logical tile by logical tile, in program order:
    a logical tile is alive from a write to its last read before the next
    write that replaces all of it; two logical tiles on overlapping physical
    memory (of two tensors, or of one tensor whose modulo allocation has
    too few physical tiles) may not be alive at the same time.  Follows the
    kernel's loops and ifs as they execute (program ids 0); False when that
    takes more than MAX_EVENTS events."""
    try:
        spans = _tile_spans(b, set(allocated))
    except _TooLong:
        return False
    rect_of, ivs = {}, []
    for (tid, blk), iv in spans.items():
        pl = b.tensors[tid].alloc
        key = (pl.space, pl.rects[pl.tile[blk]])
        r = rect_of.setdefault(key, len(rect_of))
        for lo, hi in iv:
            ivs.append((lo, hi, r, tid, blk))
    rects = list(rect_of)
    near = [[j for j, (sp2, y) in enumerate(rects) if sp2 == sp and _overlap(x, y)]
            for sp, x in rects]
    ivs.sort()
    active = [[] for _ in rects]
    for lo, hi, r, tid, blk in ivs:
        for j in near[r]:
            act = active[j] = [a for a in active[j] if a[1] > lo]
            for lo2, hi2, tid2, blk2 in act:
                if (tid2, blk2) == (tid, blk):
                    continue
                ti, tj = b.tensors[tid], b.tensors[tid2]
                if tid2 != tid:
                    raise _conflict(b, ti, rects[r][1], tj, rects[j][1])
                raise NKIError(
                    "logical tiles %r and %r of tensor `%s` (%s) share %s while both are"
                    " alive: the allocation has too few physical tiles for the logical tiles"
                    " that must be alive at the same time (lifetime conflict)"
                    % (blk2, blk, ti.name, ti.alloc.what, _fmt(rects[r][1])) + _at(b, ti.loc))
        active[r].append((lo, hi, tid, blk))
    return True


def _tile_spans(b, allocated):
    """Per (tensor, logical tile) of the allocated tensors, its lifetimes
    [first, last] in op executions."""
    env, fns, spans, cur = {}, b.fns, {}, {}
    clock, events = [0], [0]

    def val(a):
        v = a.c
        for k, c in a.t.items():
            if k[0] == "l":
                v += c * env[k[1]]
            elif k[0] == "f":
                kind, fa, d = fns[k[1]]
                x = val(fa)
                v += c * (x % d if kind == "mod" else x // d)
        return v                # program ids: 0

    def tiles(acc, nblk):
        out = [()]
        for a in acc.index[1:1 + nblk]:
            vals = {val(Aff(a.c, {k: c for k, c in a.t.items() if not isinstance(k, int)}))}
            for k, c in a.t.items():
                if isinstance(k, int):
                    vals = {v + c * i for v in vals for i in range(acc.shape[k])}
            out = [o + (v,) for o in out for v in sorted(vals)]
        events[0] += len(out)
        if events[0] > MAX_EVENTS:
            raise _TooLong()
        return out

    def whole_tile(acc, nblk):
        if acc.mask:
            return False
        dims = [0] + list(range(1 + nblk, len(acc.index)))
        t = b.tensors[acc.tensor]
        seen = set()
        for d in dims:
            a = acc.index[d]
            axes = [(k, c) for k, c in a.t.items() if isinstance(k, int)]
            if not axes:
                if t.shape[d] != 1 or val(a) != 0:
                    return False
                continue
            if len(axes) != 1 or a.c != 0 or len(a.t) != 1:
                return False
            k, c = axes[0]
            if c != 1 or k in seen or acc.shape[k] != t.shape[d]:
                return False
            seen.add(k)
        return True

    def close(key):
        iv = cur.pop(key, None)
        if iv is not None:
            spans.setdefault(key, []).append(tuple(iv))

    def run(op):
        clock[0] += 1
        now = clock[0]
        acts = {}
        if op.dst is not None and op.dst.tensor in allocated:
            t = b.tensors[op.dst.tensor]
            nblk = t.blocks
            if op.kind == ir.OP_ALLOC and (op.fields.get("fill") == ir.FILL_UNINIT
                                           or op.fields.get("_acc_group")):
                # a new allocation: the old contents are dead (zeros that
                # start an accumulation group come with its first matmul)
                for blk in tiles(op.dst, nblk):
                    close((op.dst.tensor, blk))
            else:
                full = whole_tile(op.dst, nblk)
                for blk in tiles(op.dst, nblk):
                    acts[(op.dst.tensor, blk)] = "w" if full else "r"
                if op.fields.get("accumulate"):
                    for blk in tiles(op.dst, nblk):
                        acts[(op.dst.tensor, blk)] = "r"
        for s in op.src:
            if s is not None and not isinstance(s, float) and s.tensor in allocated:
                for blk in tiles(s, b.tensors[s.tensor].blocks):
                    acts[(s.tensor, blk)] = "r"
        for key, how in acts.items():
            if how == "w":
                close(key)
                cur[key] = [now, now]
            elif key in cur:
                cur[key][1] = now
            else:
                cur[key] = [now, now]

    def walk(body):
        for op in body:
            if op.loop is not None:
                var, _, start, stop, step, inner = op.loop[:6]
                for v in range(start, stop, step):
                    env[var] = v
                    walk(inner)
                continue
            if op.branch is not None:
                conds, then_b, else_b = op.branch
                walk(then_b if all(val(c) >= 0 for c in conds) else else_b)
                continue
            run(op)
    walk(b.body)
    for key in list(cur):
        close(key)
    return spans
