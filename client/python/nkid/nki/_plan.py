"""Call plans: the warm path of ``nki.baremetal`` (docs/performance.md,
"Python call path").

After a call has gone the whole way (bind the signature, trace or find the
trace, ask nkid, convert every array) and nkid has answered with a NEFF key,
:func:`record` keeps a :class:`Plan` for that specialization: which
arguments are the kernel's inputs, their wire names and dtypes, the KernelRef
naming the NEFF key, and how to read the outputs.  The next call with
arguments of the same kind (:func:`arg_key`: shape and dtype of each numpy
array, type and value of each static) runs :meth:`Plan.run`: it builds the
RunRequest from the plan with only the tensor bytes new, sends it over the
fast path (:mod:`nkid._fastpath`; gRPC when there is none) and reads the
outputs; no signature binding,
no tracer, no per-tensor dtype work.

What the trace reads besides its arguments is checked on every call
(``tracer.deps.fingerprint``): a changed global, closure, default or helper
makes the plan stale and the call goes the whole way again.  A plan covers
inline tensors only: when an input or the outputs reach the shared-memory
threshold (``NKID_SHM_THRESHOLD``, read per call) the call goes the whole
way.  A NEFF key nkid no longer has drops the plan, and the call goes the
whole way, sending the IR.
"""

import numpy as np

from .._proto import nkid_pb2 as pb
from .. import _fastpath
from .. import _shm
from ..client import Prepared, get_client, from_wire
from ..errors import NkidError
from ..tracer import deps as _deps
from ..tracer import array_args
from ..tracer import dtypes as _dt

__all__ = ["arg_key", "record", "lookup", "MISS", "Plan"]

#: What :meth:`Plan.run` returns when the call must go the whole way.
MISS = object()

_STATIC = (int, float, bool, str, bytes, type(None))


def _varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def _tag(message, field):
    """The key of a length-delimited field of message (wire type 2)."""
    return _varint(message.DESCRIPTOR.fields_by_name[field].number << 3 | 2)


_INPUTS_TAG = _tag(pb.RunRequest, "inputs")
_DATA_TAG = _tag(pb.Tensor, "data")


def _static_key(v):
    t = type(v)
    if t in _STATIC:
        return (t, v)
    if t is tuple:
        parts = tuple(_static_key(x) for x in v)
        return None if None in parts else (tuple, parts)
    return None


def _one_key(v):
    if v.__class__ is np.ndarray:
        dt = v.dtype
        return (v.shape, dt) if dt.isnative else None
    return _static_key(v)


def arg_key(args, kwargs):
    """A hashable key for the kind of a call's arguments, or None when some
    argument is neither a native-order numpy array nor a plain static value
    (int, float, bool, str, bytes, None, tuples of them).  1, 1.0 and True
    key apart (their types are part of the key)."""
    key = []
    for a in args:
        k = _one_key(a)
        if k is None:
            return None
        key.append(k)
    for name, a in kwargs.items():
        k = _one_key(a)
        if k is None:
            return None
        key.append((name, k))
    return tuple(key)


def _slots(arrays, args, kwargs):
    """Where each input array of a call came from: an index into args or a
    keyword name (the same object twice takes the next unused place)."""
    places = list(enumerate(args)) + list(kwargs.items())
    used, out = set(), []
    for a in arrays:
        for s, v in places:
            if v is a and s not in used:
                used.add(s)
                out.append(s)
                break
        else:
            return None
    return out


class Plan:
    """The prebuilt Run of one specialization of one kernel."""

    def __init__(self, kernel, traced, fingerprint, client, neff_key, slots, inputs):
        """inputs: (name, wire dtype, shape, bytes) of each kernel input."""
        self.traced = traced
        self.fingerprint = fingerprint
        # What the fingerprint's walk read, to check it cheaply.
        p = _deps.probes(kernel.func)
        self.probes = p if p is not None and p[2] == fingerprint else None
        self.client = client
        self.slots = slots
        self.ref = pb.KernelRef(neff_key=neff_key, target=kernel.platform_target or "",
                                options=kernel.additional_compile_opt or "")
        # The request's bytes but the tensors' data: each call joins them
        # with the arrays' bytes (fields of a message may come in any
        # order, and the sizes are fixed by the shapes).
        self.prefix = pb.RunRequest(ref=self.ref, core=-1,
                                    job_class=pb.JOB_CLASS_INTERACTIVE).SerializeToString()
        self.frames = []
        for name, dtype, shape, nbytes in inputs:
            head = pb.Tensor(name=name, dtype=dtype, shape=shape).SerializeToString()
            head += _DATA_TAG + _varint(nbytes)
            self.frames.append(_INPUTS_TAG + _varint(len(head) + nbytes) + head)
        self.in_max = max([i[3] for i in inputs] or [0])
        outs = []
        total = 0
        for name, shape, dtype in traced.outputs:
            # What nkid sends and what from_wire makes of it.
            dname = _dt.wire_name(dtype)
            dt = _dt.from_wire_name(dname)
            wire = dt.newbyteorder("<") if dt.itemsize > 1 else dt
            n = dt.itemsize
            for s in shape:
                n *= int(s)
            total += n
            outs.append((dname, tuple(int(s) for s in shape), wire, dt, n))
        self.outputs = outs
        self.out_total = total

    def fits(self):
        """Every tensor of the call travels inline at today's threshold."""
        lim = _shm.threshold()
        return self.in_max < lim and (self.out_total < lim or not self.outputs)

    def request(self, arrays):
        """The RunRequest for these input arrays, serialized."""
        parts = [self.prefix]
        for frame, a in zip(self.frames, arrays):
            parts.append(frame)
            parts.append(a.tobytes())
        return Prepared(pb.RunRequest, b"".join(parts), self.ref)

    def results(self, reply):
        """The output arrays of reply.  The shapes are the plan's: the NEFF
        key names the kernel's signature.  A count, dtype or size other
        than the plan's is read the slow way, which names what is
        wrong."""
        outs = reply.outputs
        if len(outs) != len(self.outputs):
            return [from_wire(t) for t in outs]
        res = []
        for t, (dname, shape, wire, dt, n) in zip(outs, self.outputs):
            d = t.data
            if len(d) != n or t.dtype != dname:
                res.append(from_wire(t))
            elif wire == dt:
                # One copy, into memory the caller's array owns.
                res.append(np.ndarray(shape, dt, buffer=bytearray(d)))
            else:
                res.append(np.frombuffer(d, dtype=wire).astype(dt, copy=True).reshape(shape))
        return res


_tables = {}


def table(kernel):
    """The plans of kernel's function, grid, target and options (shared by
    the kernel objects made for them, such as ``k[2, 2]`` on every call):
    {arg_key: Plan}."""
    key = (type(kernel), kernel.func, kernel.grid, kernel.platform_target,
           kernel.additional_compile_opt)
    t = _tables.get(key)
    if t is None:
        t = _tables[key] = {}
    return t


def lookup(plans, func, args, kwargs):
    """(plan, arrays) for a call of func with these arguments from plans
    (:func:`table`), or None when the call must go the whole way."""
    key = arg_key(args, kwargs)
    plan = plans.get(key) if key is not None else None
    if plan is None or get_client() is not plan.client or not plan.fits():
        return None
    if not (_deps.same(func, plan.probes) if plan.probes is not None
            else _deps.fingerprint(func) == plan.fingerprint):
        return None
    return plan, [args[s] if s.__class__ is int else kwargs[s] for s in plan.slots]


def run(plan, arrays):
    """Call nkid with the plan's request; the reply, or MISS when nkid no
    longer has the NEFF key (the plan is dropped)."""
    try:
        return _fastpath.call(plan.client, "Run", plan.request(arrays),
                              reply_bytes=plan.out_total)
    except NkidError as e:
        if e.code not in ("NOT_FOUND", "FAILED_PRECONDITION"):
            raise
        drop(plan)
        return MISS


def drop(plan):
    """Forget plan (its NEFF key is gone)."""
    for t in list(_tables.values()):
        for k, p in list(t.items()):
            if p is plan:
                t.pop(k, None)


def record(kernel, plans, traced, fingerprint, args, kwargs, reply):
    """Keep a plan after a call that went the whole way (its reply is
    reply): when its tensors all travelled inline and nkid named the NEFF
    key."""
    if fingerprint is None or reply is None or not reply.neff_key or \
            not traced.memo_ok or \
            any(t.HasField("shm") for t in reply.outputs):
        return
    akey = arg_key(args, kwargs)
    if akey is None:
        return
    arrays = array_args(kernel.func, args, kwargs)
    slots = _slots(arrays, args, kwargs)
    if slots is None or len(arrays) != len(traced.params) or \
            any(type(a) is not np.ndarray for a in arrays):
        return
    inputs = [(name, _dt.wire_name(_dt.normalize(a.dtype)), [int(s) for s in a.shape], a.nbytes)
              for (name, _, _), a in zip(traced.params, arrays)]
    plan = Plan(kernel, traced, fingerprint, get_client(), reply.neff_key, slots, inputs)
    if plan.fits():
        plans[akey] = plan
