"""NKI data types, their NKIR codes, their wire names and type promotion.

Data types are numpy dtypes (bf16, fp8 and float8_e8m0fnu from
``ml_dtypes``), except ``tfloat32``, which numpy lacks: it is the
:data:`tfloat32` marker and travels to and from the host as float32; and
NKI 0.6's packed MX types (``float8_e5m2_x4``, ``float8_e4m3fn_x4``,
``float4_e2m1fn_x4``: four values an element), markers that travel as the
unsigned integers of their size (uint32, uint16), their bytes unchanged, as
the MX deep dive's ``pack_mx_data_into_x4`` packs them.
"""

import numpy as np
import ml_dtypes

from .._proto import nkir_pb2 as ir

__all__ = ["tfloat32", "normalize", "to_ir", "wire_name", "from_wire_name",
           "promote", "is_float", "itemsize", "name_of"]


class _TFloat32:
    """32-bit float with a 10-bit mantissa (1S,8E,10M); host arrays are float32."""

    name = "tfloat32"
    itemsize = 4
    kind = "f"

    def __repr__(self):
        return "tfloat32"

    def __reduce__(self):
        return "tfloat32"


tfloat32 = _TFloat32()


class _Packed:
    """A packed MX type: four float8 (or float4) values in one element of
    ``itemsize`` bytes, the first in the lowest bits; host arrays are
    ``host`` (uint32 or uint16) holding those bytes."""

    kind = "V"

    def __init__(self, name, itemsize, host):
        self.name = name
        self.itemsize = itemsize
        self.host = np.dtype(host)

    def __repr__(self):
        return self.name

    def __reduce__(self):
        return self.name


float8_e5m2_x4 = _Packed("float8_e5m2_x4", 4, np.uint32)
float8_e4m3fn_x4 = _Packed("float8_e4m3fn_x4", 4, np.uint32)
float4_e2m1fn_x4 = _Packed("float4_e2m1fn_x4", 2, np.uint16)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
_PACKED = {float8_e5m2_x4: None, float8_e4m3fn_x4: None, float4_e2m1fn_x4: None}

float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
int8, int16, int32 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32)
uint8, uint16, uint32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32)
bool_ = np.dtype(np.bool_)

_TO_IR = {
    float32: ir.DT_FLOAT32, float16: ir.DT_FLOAT16, bfloat16: ir.DT_BFLOAT16,
    int8: ir.DT_INT8, int16: ir.DT_INT16, int32: ir.DT_INT32,
    uint8: ir.DT_UINT8, uint16: ir.DT_UINT16, uint32: ir.DT_UINT32,
    float8_e4m3: ir.DT_FP8_E4M3, float8_e5m2: ir.DT_FP8_E5M2, bool_: ir.DT_BOOL,
    float8_e8m0fnu: ir.DT_FP8_E8M0, float8_e5m2_x4: ir.DT_FP8_E5M2_X4,
    float8_e4m3fn_x4: ir.DT_FP8_E4M3_X4, float4_e2m1fn_x4: ir.DT_FP4_E2M1_X4,
}

_ALIASES = {
    "tfloat32": tfloat32, "tf32": tfloat32,
    "bfloat16": bfloat16, "bf16": bfloat16,
    "float8_e4m3": float8_e4m3, "float8_e4m3fn": float8_e4m3, "fp8_e4m3": float8_e4m3,
    "float8_e5m2": float8_e5m2, "fp8_e5m2": float8_e5m2,
    "float8_e8m0fnu": float8_e8m0fnu, "float8_e5m2_x4": float8_e5m2_x4,
    "float8_e4m3fn_x4": float8_e4m3fn_x4, "float4_e2m1fn_x4": float4_e2m1fn_x4,
}


def is_packed(dt):
    """True for the packed MX types (float8_e5m2_x4, float8_e4m3fn_x4,
    float4_e2m1fn_x4)."""
    return isinstance(dt, _Packed)


def normalize(dt):
    """The canonical dtype for anything NKI accepts as a dtype."""
    if dt is tfloat32 or isinstance(dt, _Packed):
        return dt
    if isinstance(dt, str) and dt in _ALIASES:
        return _ALIASES[dt]
    d = np.dtype(dt)
    if d == np.dtype(ml_dtypes.float8_e4m3):
        d = float8_e4m3
    if d not in _TO_IR:
        raise TypeError("unsupported data type %r" % (dt,))
    return d


def to_ir(dt):
    dt = normalize(dt)
    return ir.DT_TFLOAT32 if dt is tfloat32 else _TO_IR[dt]


_names = {}


def name_of(dt):
    """numpy's name of dt (remembered: dtype.name is slow for a hot path)."""
    if dt is tfloat32:
        return "tfloat32"
    if isinstance(dt, _Packed):
        return dt.name
    try:
        return _names[dt]
    except (KeyError, TypeError):
        pass
    n = np.dtype(dt).name
    try:
        _names[dt] = n
    except TypeError:
        pass
    return n


def wire_name(dt):
    """numpy's name of a host dtype, as nkid.v1.Tensor.dtype carries it."""
    return name_of(dt)


def from_wire_name(name):
    """The numpy dtype for a wire name (tfloat32 arrives as float32)."""
    if name == "tfloat32":
        return float32
    if name in _ALIASES:
        return host_dtype(_ALIASES[name])
    try:
        return np.dtype(name)
    except TypeError:
        return np.dtype(getattr(ml_dtypes, name))


def host_dtype(dt):
    if isinstance(dt, _Packed):
        return dt.host
    return float32 if dt is tfloat32 else dt


def is_float(dt):
    if isinstance(dt, _Packed):
        return False
    return dt is tfloat32 or np.dtype(dt).kind == "f" or dt in (bfloat16, float8_e4m3, float8_e5m2,
                                                                     float8_e8m0fnu)


def itemsize(dt):
    return dt.itemsize


_FLOAT_RANK = {float8_e4m3: 0, float8_e5m2: 0, float8_e8m0fnu: 0, float16: 1, bfloat16: 1, tfloat32: 2, float32: 3}


def promote(a, b):
    """NKI's binary type promotion.

    Same type -> itself; (int, float) -> the float; (fp16, bf16) -> fp32;
    (fp8e4, fp8e5) -> bf16; (int8, uint8) -> int16; (int32, uint32) ->
    fp32; otherwise the wider type of the same kind.
    """
    if a is b or a == b:
        return a
    fa, fb = is_float(a), is_float(b)
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if fa and fb:
        if {a, b} == {float16, bfloat16}:
            return float32
        if {a, b} == {float8_e4m3, float8_e5m2}:
            return bfloat16
        if _FLOAT_RANK[a] == _FLOAT_RANK[b]:
            return float32
        return a if _FLOAT_RANK[a] > _FLOAT_RANK[b] else b
    if a == bool_:
        return b
    if b == bool_:
        return a
    sa, sb = a.kind == "i", b.kind == "i"
    if sa == sb:
        return a if a.itemsize >= b.itemsize else b
    s, u = (a, b) if sa else (b, a)
    if s.itemsize > u.itemsize:
        return s
    if u.itemsize == 1:
        return int16
    if u.itemsize == 2:
        return int32
    return float32


def promote_scalar(dt, value):
    """Python scalars are weak: a tile keeps its type unless a float scalar
    meets an integer tile (then fp32)."""
    if isinstance(value, float) and not is_float(dt):
        return float32
    return dt


def scalar_dtype(value):
    if isinstance(value, bool):
        return uint8
    if isinstance(value, int):
        return int32
    return float32
