"""A compact text rendering of NKIR, for debugging (``python -m nkid.trace --print``)."""

from .._proto import nkir_pb2 as ir

__all__ = ["format_kernel"]


def _aff(a):
    parts = [str(a.constant)] if a.constant or not a.terms else []
    for t in a.terms:
        name = {ir.TERM_AXIS: "ax", ir.TERM_LOOP: "i", ir.TERM_PROGRAM: "pid",
                ir.TERM_FN: "fn"}.get(t.kind, "?") + str(t.index)
        parts.append(name if t.coef == 1 else "%d*%s" % (t.coef, name))
    return "+".join(parts).replace("+-", "-")


def _acc(a, tensors):
    s = "%s[%s]{%s}" % (tensors[a.tensor].name or "t%d" % a.tensor,
                        ", ".join(_aff(x) for x in a.index),
                        "x".join(map(str, a.shape)))
    if a.mask:
        s += " if " + " & ".join("%s>=0" % _aff(m) for m in a.mask)
    return s


def _ops(ops, tensors, depth, out):
    pad = "  " * depth
    for op in ops:
        kind = ir.OpKind.Name(op.kind)[3:].lower()
        if op.kind == ir.OP_LOOP:
            lp = op.loop
            out.append("%sfor i%d in %s(%d, %d, %d):   # line %d" % (
                pad, lp.var, ir.LoopKind.Name(lp.kind)[5:].lower(), lp.start, lp.stop, lp.step,
                op.loc.line))
            _ops(lp.body, tensors, depth + 1, out)
            continue
        if op.kind == ir.OP_DYN_LOOP:       # NKI 0.6: while the register != 0
            out.append("%swhile %s != 0:   # line %d" % (
                pad, _acc(op.src[0].access, tensors), op.loc.line))
            _ops(op.loop.body, tensors, depth + 1, out)
            continue
        if op.kind == ir.OP_IF:
            br = op.branch
            out.append("%sif %s:   # line %d" % (
                pad, " and ".join("%s >= 0" % _aff(c) for c in br.cond) or "True",
                op.loc.line))
            _ops(br.then_body, tensors, depth + 1, out)
            if br.else_body:
                out.append("%selse:" % pad)
                _ops(br.else_body, tensors, depth + 1, out)
            continue
        srcs = [(_acc(s.access, tensors) if s.HasField("access") else repr(s.scalar))
                for s in op.src]
        extra = []
        if op.alu:
            extra.append(ir.AluOp.Name(op.alu)[4:].lower())
        if op.act:
            extra.append(ir.ActFunc.Name(op.act)[4:].lower())
        if op.axes:
            extra.append("axes=%s" % list(op.axes))
        if op.accumulate:
            extra.append("accumulate")
        if op.transpose_x:
            extra.append("transpose_x")
        if op.kind == ir.OP_ALLOC:
            extra.append(ir.Fill.Name(op.fill)[5:].lower())
        dst = _acc(op.dst, tensors) if op.HasField("dst") else "-"
        out.append("%s%s = %s%s(%s)   # line %d" % (
            pad, dst, kind, "[%s]" % ",".join(extra) if extra else "", ", ".join(srcs),
            op.loc.line))


def format_kernel(k):
    """NKIR kernel message -> readable text."""
    out = ["kernel %s grid=%s loops=%d" % (k.name, list(k.grid), k.num_loop_vars)]
    for i, t in enumerate(k.tensors):
        out.append("  t%d %s: %s %s %s %s" % (i, t.name, ir.TensorKind.Name(t.kind)[7:].lower(),
                                            ir.Space.Name(t.space)[6:].lower(),
                                            ir.DType.Name(t.dtype)[3:].lower(), list(t.shape)))
    out.append("  params %s outputs %s" % ([p.tensor for p in k.params], list(k.outputs)))
    _ops(k.body, k.tensors, 1, out)
    return "\n".join(out)
