"""The closed set of primitive operations, grouped by TVM's fusion categories.

Every graph node carries one `Op`. The groups below are what fusion and the rule tables key on;
`tests/test_rule_tables.py` checks that every op has an entry in every table that needs one.
"""
from __future__ import annotations

from enum import Enum, auto


class Op(Enum):
    # Members are singletons: hash by identity (Enum's own hash is a Python call on the name, and
    # every graph node built hashes its op)
    __hash__ = object.__hash__

    # sources
    BUFFER = auto()     # realized memory; arg: the Buffer
    CONST = auto()      # one scalar broadcast to the node's shape; arg: the Python value
    # unary elementwise
    NEG = auto()
    NOT = auto()        # logical not on bool, bitwise invert on integers
    ABS = auto()
    SQRT = auto()
    EXP = auto()
    LOG = auto()
    SIN = auto()
    COS = auto()
    TANH = auto()
    FLOOR = auto()      # rounding ops: identity on integers and bool (as the Array API says)
    CEIL = auto()
    TRUNC = auto()
    ROUND = auto()      # to nearest, ties to even
    TAN = auto()
    ASIN = auto()
    ACOS = auto()
    ATAN = auto()
    SINH = auto()
    COSH = auto()
    ASINH = auto()
    ACOSH = auto()
    ATANH = auto()
    EXPM1 = auto()
    LOG1P = auto()
    LOG2 = auto()
    LOG10 = auto()
    ERF = auto()        # the error function, 2/sqrt(pi) * integral of exp(-t^2) from 0 to x
    SIGNBIT = auto()    # bool: the sign bit is set (True for -0.0 and negative nan)
    CAST = auto()       # arg: the target DType (the node's dtype)
    # the same bits seen as another type of the same size; arg: that DType. Made by the bfloat16
    # lowering (ir/bfloat16.py) only, between float32 and uint32
    BITCAST = auto()
    # binary elementwise (operands have equal shape and dtype; the front end inserts casts)
    ADD = auto()
    SUB = auto()
    MUL = auto()
    DIV = auto()        # true division, floats only
    FLOORDIV = auto()   # rounds toward -inf like Python; floats follow numpy.floor_divide
    MOD = auto()        # result takes the sign of the divisor, like Python and numpy
    POW = auto()
    MAX = auto()        # elementwise maximum, NaN-propagating like numpy.maximum
    MIN = auto()
    CMPLT = auto()
    CMPLE = auto()
    CMPEQ = auto()
    CMPNE = auto()
    AND = auto()
    OR = auto()
    XOR = auto()
    SHL = auto()        # shifts by the operand's bit width or more give 0 (or -1 for >> of a negative)
    SHR = auto()
    ATAN2 = auto()
    HYPOT = auto()
    COPYSIGN = auto()
    # ternary
    WHERE = auto()      # src: (condition: bool, if_true, if_false)
    # reductions; arg: the reduced axes; the reduced axes stay in the shape with size 1
    SUM = auto()
    PROD = auto()
    REDUCE_MAX = auto()
    REDUCE_MIN = auto()
    # movement (views: they change indexing, never data); arg as in View's method of that name
    RESHAPE = auto()    # arg: new shape
    PERMUTE = auto()    # arg: axis order
    EXPAND = auto()     # arg: new shape (size-1 axes grow)
    SHRINK = auto()     # arg: ((start, stop, step), ...) per axis; step may be negative
    PAD = auto()        # arg: ((before, after), ...) per axis; pads with zero/False
    FLIP = auto()       # arg: the flipped axes
    # data-dependent indexing; src: (x, index), arg: the axis of x that `index` picks from.
    # shape: x.shape[:axis] + index.shape + x.shape[axis+1:]; negative indices count from the
    # end, and out-of-range ones are clamped (there is no error from inside a kernel)
    GATHER = auto()
    # opaque: never fused; run as a step of their own on realized inputs
    SORT = auto()           # arg: (axis, descending); stable
    ARGSORT = auto()        # arg: (axis, descending); stable; int64
    CUMSUM = auto()         # arg: (axis, include_initial); in the node's dtype
    SEARCHSORTED = auto()   # src: (sorted 1-D, values); arg: side ("left"/"right"); int64
    # GATHER's transpose, a scatter-add into zeros; src: (index, values), arg: (axis, n). The
    # result has values' shape with index's axes (from `axis` on) replaced by one axis of size n;
    # result[..., j, ...] = sum of values[..., i..., ...] over the positions i where index is j.
    # Indices mean what they mean to GATHER: negative ones count from the end, others are clamped
    SCATTER_ADD = auto()
    # the linalg extension's decompositions and solvers (ir/linalg.py): result arg[1] of the
    # numpy.linalg routine arg[0] of the sources, with options arg[2]
    LINALG = auto()
    # the fft extension's transforms (ir/fft.py): arg (name, sizes, axes, norm), numpy.fft's
    FFT = auto()
    # complex numbers, in user graphs only: ir/complex.py lowers every complex node to a pair of
    # real ones before fusion, so kernels and backends never see these three
    REAL = auto()       # the real part of a complex value (its component float type)
    IMAG = auto()       # the imaginary part
    COMPLEX = auto()    # src: (real part, imaginary part), floats of one dtype; their complex value
    # opaque: another op run on the host on complex values stored as float pairs (a last axis of
    # size 2), for the ops whose complex meaning is no function of the parts' own (a product, a
    # decomposition). arg: (op, its arg, which sources are pairs, its dtype, its shape); the
    # result is pairs where that dtype is complex
    PAIRS = auto()
    # autograd's stop: the value of src[0], through which no gradient flows. optimize() removes
    # it (by then autograd is done), so kernels and backends never see it
    DETACH = auto()
    # kernel-expression leaves: only inside a fused kernel, never in a user graph
    LOAD = auto()       # arg: (input slot, ViewStack)
    VALID = auto()      # bool, True where the ViewStack's mask is valid; arg: ViewStack
    # loop-IR index arithmetic on non-negative int64 values (C division is floor division there)
    IDIV = auto()
    IMOD = auto()


SOURCE = frozenset({Op.BUFFER, Op.CONST})
UNARY = frozenset({
    Op.NEG, Op.NOT, Op.ABS, Op.SQRT, Op.EXP, Op.LOG, Op.SIN, Op.COS, Op.TANH, Op.CAST,
    Op.FLOOR, Op.CEIL, Op.TRUNC, Op.ROUND, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN, Op.SINH, Op.COSH,
    Op.ASINH, Op.ACOSH, Op.ATANH, Op.EXPM1, Op.LOG1P, Op.LOG2, Op.LOG10, Op.SIGNBIT, Op.ERF, Op.BITCAST,
})
BINARY = frozenset({
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV, Op.MOD, Op.POW, Op.MAX, Op.MIN,
    Op.CMPLT, Op.CMPLE, Op.CMPEQ, Op.CMPNE, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR,
    Op.ATAN2, Op.HYPOT, Op.COPYSIGN,
})
COMPARISON = frozenset({Op.CMPLT, Op.CMPLE, Op.CMPEQ, Op.CMPNE})
TERNARY = frozenset({Op.WHERE})
COMPLEX_PARTS = frozenset({Op.REAL, Op.IMAG, Op.COMPLEX})   # (never reach a backend: see above)
ELEMENTWISE = UNARY | BINARY | TERNARY | COMPLEX_PARTS
MOVEMENT = frozenset({Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.SHRINK, Op.PAD, Op.FLIP})
REDUCTION = frozenset({Op.SUM, Op.PROD, Op.REDUCE_MAX, Op.REDUCE_MIN})
INDEXING = frozenset({Op.GATHER})
GRAPH_ONLY = frozenset({Op.DETACH})  # ops that optimize() removes before fusion
INDEX = frozenset({Op.IDIV, Op.IMOD})

# Fusion (scheduler/fusion.py, which has the exceptions) reads TVM's categories as the groups
# above and OPAQUE: elementwise ops fuse into their consumer, movement ops fold into the index of
# their loads, a reduction absorbs its elementwise inputs, and opaque ops are steps of their own,
# run on realized inputs. (No complex-out-fusable group: a matmul or a convolution is a reduction
# of a product, fused as one.)
OPAQUE = frozenset({Op.SORT, Op.ARGSORT, Op.CUMSUM, Op.SEARCHSORTED, Op.SCATTER_ADD, Op.LINALG, Op.FFT, Op.PAIRS})

# The ops that mean something for complex operands (ir/complex.py lowers each); `make` refuses
# the others (ordering, rounding, bit operations, max/min, sorting) with a TypeError.
COMPLEX_OPS = MOVEMENT | COMPLEX_PARTS | GRAPH_ONLY | frozenset({
    Op.BUFFER, Op.CONST, Op.CAST, Op.WHERE, Op.GATHER, Op.SCATTER_ADD, Op.CUMSUM, Op.SUM, Op.PROD, Op.LINALG, Op.FFT,
    Op.ABS, Op.CMPEQ, Op.CMPNE, Op.NEG, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.EXP, Op.EXPM1, Op.LOG,
    Op.LOG1P, Op.LOG2, Op.LOG10, Op.SQRT, Op.SIN, Op.COS, Op.TAN, Op.SINH, Op.COSH, Op.TANH, Op.ASIN,
    Op.ACOS, Op.ATAN, Op.ASINH, Op.ACOSH, Op.ATANH,
})

# Transcendental ops: their device libraries may round otherwise than numpy, so a small value is
# never computed with them on the host (lazytensor/host.py's _HOST_OPS).
TRANSCENDENTAL = frozenset({
    Op.EXP, Op.LOG, Op.SIN, Op.COS, Op.TANH, Op.POW, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN, Op.SINH,
    Op.COSH, Op.ASINH, Op.ACOSH, Op.ATANH, Op.EXPM1, Op.LOG1P, Op.LOG2, Op.LOG10, Op.ATAN2, Op.HYPOT,
    Op.ERF,
})
