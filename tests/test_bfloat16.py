"""bfloat16: stored as the upper half of a float32, computed in float32 and rounded after each
op (as PyTorch does), on every device; in and out through DLPack.

The reference rounds float32 values to bfloat16 by float64 arithmetic on the exponent and
significand (no bit tricks, so it shares nothing with lazytensor's rounding)."""
import pickle

import numpy as np
import pytest

import lazytensor as lt
from conftest import DEVICES, has_fp64

BF16_MAX = (2 - 2.0 ** -7) * 2.0 ** 127


def rounded(values) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 value, ties to even (a float32 array)."""
    x = np.asarray(values, dtype=np.float32).astype(np.float64)
    _, exponent = np.frexp(x)   # x = m * 2**exponent, 0.5 <= |m| < 1
    ulp = np.ldexp(1.0, np.maximum(exponent - 1, -126) - 7)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(np.isfinite(x), np.rint(x / ulp) * ulp, x).astype(np.float32)


def bf16_values(rng, shape, scale=1.0) -> np.ndarray:
    """Random bfloat16 values (as float32)."""
    return rounded(rng.standard_normal(shape) * scale)


def all_bf16_values() -> np.ndarray:
    """Every bfloat16 value, nans included, decoded from its sign, exponent and significand."""
    bits = np.arange(1 << 16)
    sign = np.where(bits >> 15, -1.0, 1.0)
    exponent, significand = (bits >> 7) & 0xFF, bits & 0x7F
    with np.errstate(over="ignore"):
        value = np.where(exponent == 0, np.ldexp(significand / 128.0, -126),
                         np.ldexp(1 + significand / 128.0, exponent - 127))
    value = np.where(exponent == 0xFF, np.where(significand == 0, np.inf, np.nan), value)
    return (sign * value).astype(np.float32)


def test_reference_rounding_is_what_it_claims():
    # the test's own reference: exact on bfloat16 values, halfway cases to the even neighbour
    values = all_bf16_values()
    finite = values[np.isfinite(values)]
    np.testing.assert_array_equal(rounded(finite), finite)
    assert rounded(1 + 2.0 ** -8) == 1.0 and rounded(1 + 3 * 2.0 ** -8) == 1 + 2.0 ** -6
    assert rounded(np.float32(3.4e38)) == np.inf and rounded(np.float32(3.39e38)) == np.float32(BF16_MAX)


def test_every_value_survives_the_round_trip(device):
    values = all_bf16_values()
    x = lt.asarray(values, dtype=lt.bfloat16, device=device)
    assert x.dtype == lt.bfloat16 and x.numpy().dtype == np.float32
    np.testing.assert_array_equal(x.numpy(), values)   # (nan == nan here)
    # and through a kernel: widened to float32 and written back
    np.testing.assert_array_equal((-(-x)).numpy(), values)
    np.testing.assert_array_equal(x.astype(lt.float32).numpy(), values)


def awkward_float32(rng, n=20000) -> np.ndarray:
    """float32 values of every magnitude, with halfway cases, subnormals, zeros, infinities,
    nans and values that round past bfloat16's largest."""
    mantissa = rng.standard_normal(n)
    x = np.ldexp(mantissa, rng.integers(-140, 128, n)).astype(np.float32)
    halfway = np.ldexp(1 + (rng.integers(0, 128, 2000) * 2 + 1) / 256.0, rng.integers(-120, 120, 2000))
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.39e38, BF16_MAX, 1e-45, -1e-40, 2.0 ** -133]
    return np.concatenate([x, halfway.astype(np.float32), np.array(special, np.float32)])


def test_conversion_from_float32_rounds_to_nearest_even(device):
    x = awkward_float32(np.random.default_rng(0))
    want = rounded(x)
    host = lt.asarray(x, dtype=lt.bfloat16, device=device)            # converted on the host
    kernel = lt.asarray(x, device=device).astype(lt.bfloat16)         # converted in a kernel
    np.testing.assert_array_equal(host.numpy(), want)
    np.testing.assert_array_equal(kernel.numpy(), want)
    assert np.array_equal(np.signbit(kernel.numpy()), np.signbit(want))   # (-0.0 stays -0.0)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float16",
                                   "float64"])
def test_casts_to_and_from_every_dtype(device, dtype):
    if dtype == "float64" and not has_fp64(device):
        pytest.skip("no float64 on this device")
    rng = np.random.default_rng(1)
    source = rng.standard_normal((7, 5)) * 100
    source = (np.abs(source) if dtype.startswith("u") else source).astype(dtype) if dtype != "bool" else source < 0
    x = lt.asarray(source, device=device).astype(lt.bfloat16)
    np.testing.assert_array_equal(x.numpy(), rounded(source.astype(np.float32)))
    back = x.astype(dtype)
    assert back.dtype == dtype
    np.testing.assert_array_equal(back.numpy(), x.numpy().astype(dtype))


UNARY = {
    "negative": np.negative, "abs": np.abs, "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "sin": np.sin,
    "tanh": np.tanh, "floor": np.floor, "round": np.round, "expm1": np.expm1, "log1p": np.log1p,
    "square": np.square,
}
EXACTLY_ROUNDED = {"negative", "abs", "sqrt", "floor", "round", "square", "add", "subtract", "multiply",
                   "divide", "maximum", "minimum"}


def assert_bf16_equal(got, want_float32, name):
    """Equal to the rounded float32 result; for library functions (exp, ...), whose float32
    results may differ from numpy's in the last place, within one bfloat16 step."""
    assert got.dtype == lt.bfloat16
    want = rounded(want_float32)
    if name in EXACTLY_ROUNDED:
        np.testing.assert_array_equal(got.numpy(), want)
    else:
        np.testing.assert_allclose(got.numpy(), want, rtol=2.0 ** -7, atol=0, equal_nan=True)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_compute_in_float32_and_round(device, name):
    a = bf16_values(np.random.default_rng(2), (33, 9), scale=3.0)
    if name in ("sqrt", "log", "log1p"):
        a = np.abs(a)
    x = lt.asarray(a, dtype=lt.bfloat16, device=device)
    with np.errstate(all="ignore"):
        assert_bf16_equal(getattr(lt, name)(x), UNARY[name](a), name)


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "divide", "maximum", "minimum", "pow", "atan2"])
def test_binary_ops_broadcast_and_round(device, name):
    rng = np.random.default_rng(3)
    a, b = bf16_values(rng, (6, 1, 5), 4.0), bf16_values(rng, (1, 3, 5), 4.0)
    if name == "pow":
        a = np.abs(a)
    x, y = lt.asarray(a, dtype=lt.bfloat16, device=device), lt.asarray(b, dtype=lt.bfloat16, device=device)
    with np.errstate(all="ignore"):
        assert_bf16_equal(getattr(lt, name)(x, y), getattr(np, "power" if name == "pow" else name)(a, b), name)


def test_each_op_of_a_chain_rounds(device):
    # (a * b + c) / d with a rounding after each op, as PyTorch computes it: not float32 throughout
    rng = np.random.default_rng(4)
    a, b, c, d = (bf16_values(rng, (50,)) for _ in range(4))
    x = [lt.asarray(v, dtype=lt.bfloat16, device=device) for v in (a, b, c, d)]
    got = (x[0] * x[1] + x[2]) / x[3]
    want = rounded(rounded(rounded(a * b) + c) / d)
    np.testing.assert_array_equal(got.numpy(), want)


def test_reductions_accumulate_in_float32_and_round_once(device):
    rng = np.random.default_rng(5)
    a = bf16_values(rng, (40, 300))
    x = lt.asarray(a, dtype=lt.bfloat16, device=device)
    total = x.sum(axis=1)
    assert total.dtype == lt.bfloat16
    # (a bfloat16 accumulator would be off by far more than one step: 300 terms of ~1)
    np.testing.assert_allclose(total.numpy(), rounded(a.astype(np.float64).sum(axis=1)), rtol=2.0 ** -8, atol=2e-2)
    np.testing.assert_array_equal(x.max(axis=0).numpy(), a.max(axis=0))
    np.testing.assert_allclose(lt.mean(x).item(), a.mean(), rtol=2.0 ** -7)


def test_matmul_sums_exact_products_in_float32(device):
    rng = np.random.default_rng(6)
    a, b = bf16_values(rng, (17, 64)), bf16_values(rng, (64, 9))
    got = lt.asarray(a, dtype=lt.bfloat16, device=device) @ lt.asarray(b, dtype=lt.bfloat16, device=device)
    assert got.dtype == lt.bfloat16
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got.numpy(), rounded(want), rtol=2.0 ** -7, atol=1e-6)


def test_views_indexing_and_writes(device):
    rng = np.random.default_rng(7)
    a = bf16_values(rng, (4, 6))
    x = lt.asarray(a, dtype=lt.bfloat16, device=device)
    np.testing.assert_array_equal(x[::-1, 1::2].numpy(), a[::-1, 1::2])   # negative strides
    np.testing.assert_array_equal(x.T.numpy(), a.T)
    assert x[2, 3].item() == float(a[2, 3]) and x[1].tolist() == a[1].tolist()
    np.testing.assert_array_equal(lt.concat([x, x[:1]]).numpy(), np.concatenate([a, a[:1]]))
    np.testing.assert_array_equal(lt.where(x > 0, x, 0.0).numpy(), np.where(a > 0, a, 0))
    np.testing.assert_array_equal(x[lt.asarray([3, 0, 3], device=device)].numpy(), a[[3, 0, 3]])
    x[1, 2] = 3.3                       # a write is rounded as it is stored
    x[0] = lt.asarray(np.full(6, 1.001, np.float32), device=device).astype(lt.bfloat16)
    a[1, 2], a[0] = rounded(3.3), rounded(1.001)
    np.testing.assert_array_equal(x.numpy(), a)
    empty = lt.zeros((0, 3), dtype=lt.bfloat16, device=device)
    assert (empty + 1).shape == (0, 3) and (empty.sum(axis=0)).tolist() == [0.0, 0.0, 0.0]
    one = lt.full((1, 1), 2.71828, dtype=lt.bfloat16, device=device)
    assert one.item() == rounded(2.71828) and (one * 2).item() == rounded(rounded(2.71828) * 2)


def test_promotion_follows_pytorch_and_jax():
    bf = lt.bfloat16
    cases = {
        (bf, bf): bf, (bf, lt.bool): bf, (bf, lt.int8): bf, (bf, lt.uint8): bf, (bf, lt.int64): bf,
        (bf, lt.float16): lt.float32, (bf, lt.float32): lt.float32, (bf, lt.float64): lt.float64,
        (bf, lt.complex64): lt.complex64, (bf, lt.complex128): lt.complex128,
        (bf, 1): bf, (bf, 1.5): bf, (bf, True): bf, (bf, 1j): lt.complex64,
    }
    for operands, want in cases.items():
        assert lt.result_type(*operands) == want, operands
        assert lt.result_type(*operands[::-1]) == want, operands[::-1]
    x = lt.ones(3, dtype=bf)
    assert (x + 1.5).dtype == bf and (x * lt.arange(3)).dtype == bf and (x + lt.ones(3)).dtype == lt.float32
    assert (x / 3).dtype == bf and (lt.arange(3) / x).dtype == bf and lt.exp(x).dtype == bf
    assert lt.can_cast(bf, lt.float32) and lt.can_cast(lt.uint8, bf) and lt.can_cast(bf, lt.complex64)
    assert not lt.can_cast(lt.float32, bf) and not lt.can_cast(bf, lt.float16) and not lt.can_cast(lt.int16, bf)
    torch = pytest.importorskip("torch")
    names = {bf: torch.bfloat16, lt.float16: torch.float16, lt.float32: torch.float32, lt.float64: torch.float64,
             lt.int8: torch.int8, lt.uint8: torch.uint8, lt.int64: torch.int64, lt.bool: torch.bool,
             lt.complex64: torch.complex64, lt.complex128: torch.complex128}
    for dtype, theirs in names.items():
        assert torch.promote_types(torch.bfloat16, theirs) == names[lt.result_type(bf, dtype)], dtype


def test_dtype_information():
    info = lt.finfo(lt.bfloat16)
    assert (info.bits, info.eps, info.max, info.smallest_normal) == (16, 2.0 ** -7, BF16_MAX, 2.0 ** -126)
    assert info.min == -BF16_MAX and info.dtype == lt.bfloat16
    assert lt.isdtype(lt.bfloat16, "real floating") and not lt.isdtype(lt.bfloat16, "integral")
    assert lt.bfloat16 == "bfloat16" and lt.bfloat16 != np.float32 and lt.bfloat16 != lt.float16
    assert lt.bfloat16 not in lt.__array_namespace_info__().dtypes().values()   # (not a standard dtype)
    with pytest.raises(ValueError):
        lt.iinfo(lt.bfloat16)
    nxt = lt.nextafter(lt.ones(1, dtype=lt.bfloat16), lt.full((1,), 2.0, dtype=lt.bfloat16))
    assert nxt.item() == 1 + 2.0 ** -7


def test_gradients_flow_in_bfloat16(device):
    rng = np.random.default_rng(8)
    a = bf16_values(rng, (5, 4))
    x = lt.asarray(a, dtype=lt.bfloat16, device=device, requires_grad=True)
    (x * x * 3).sum().backward()
    assert x.grad.dtype == lt.bfloat16
    np.testing.assert_allclose(x.grad.numpy(), 6 * a, rtol=2.0 ** -7)


def test_pickle_save_and_numpy_keep_bfloat16(tmp_path):
    values = all_bf16_values()[::97]
    x = lt.asarray(values, dtype=lt.bfloat16)
    y = pickle.loads(pickle.dumps(x * 1))
    assert y.dtype == lt.bfloat16
    np.testing.assert_array_equal(y.numpy(), values)
    lt.save({"w": x, "b": lt.ones(2)}, tmp_path / "state.npz")
    loaded = lt.load(tmp_path / "state.npz")
    assert sorted(loaded) == ["b", "w"] and loaded["w"].dtype == lt.bfloat16 and loaded["b"].dtype == lt.float32
    np.testing.assert_array_equal(loaded["w"].numpy(), values)
    finite = values[np.isfinite(values) & (np.abs(values) < 1e30)]
    z = np.exp(lt.asarray(finite, dtype=lt.bfloat16) * 0)   # numpy's functions give lazy bfloat16 tensors
    assert isinstance(z, lt.Tensor) and z.dtype == lt.bfloat16 and np.all(z.numpy() == 1)
    assert np.asarray(x).dtype == np.float32 and lt.unique_values(x * 0).dtype == lt.bfloat16


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"] or ["cpu"])
def test_transfers_between_devices_keep_bits(device):
    values = all_bf16_values()[::31]
    x = lt.asarray(values, dtype=lt.bfloat16).to(device)
    assert x.dtype == lt.bfloat16
    np.testing.assert_array_equal(x.to("cpu").numpy(), values)
    np.testing.assert_array_equal((x * 1).numpy(), values)


# ---- DLPack ---------------------------------------------------------------------------------

class Producer:
    """A DLPack producer of bfloat16 data, as PyTorch and JAX export it: numpy's capsule of the
    bits relabelled (lazytensor.dlpack does the same for its own exports)."""

    def __init__(self, bits: np.ndarray):
        self.bits = bits

    def __dlpack_device__(self):
        return self.bits.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        from lazytensor import dlpack
        capsule = self.bits.__dlpack__(**kwargs)
        assert dlpack.relabel(capsule, dlpack.UINT, dlpack.BFLOAT)
        return capsule


def test_dlpack_import_shares_memory_and_export_round_trips():
    values = rounded(np.random.default_rng(9).standard_normal((3, 4)))
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)
    x = lt.from_dlpack(Producer(bits))
    assert x.dtype == lt.bfloat16
    np.testing.assert_array_equal(x.numpy(), values)
    bits[0, 0] = 0x4040              # 3.0: the import shares the producer's memory
    assert x[0, 0].item() == 3.0
    y = lt.from_dlpack((x * 2).realize())   # lazytensor's own export, read back
    assert y.dtype == lt.bfloat16
    np.testing.assert_array_equal(y.numpy(), rounded(x.numpy() * 2))
    assert lt.from_dlpack(x, copy=True).dtype == lt.bfloat16
    with pytest.raises((BufferError, TypeError, RuntimeError)):
        np.from_dlpack(x)            # numpy has no bfloat16: refused by numpy, never misread as uint16


def test_dlpack_with_torch():
    torch = pytest.importorskip("torch")
    t = torch.randn(5, 6).to(torch.bfloat16)
    x = lt.from_dlpack(t)
    assert x.dtype == lt.bfloat16
    np.testing.assert_array_equal(x.numpy(), t.float().numpy())
    t[0, 0] = 5.0
    assert x[0, 0].item() == 5.0      # shared memory
    np.testing.assert_array_equal(lt.asarray(t[:, ::2]).numpy(), t[:, ::2].float().numpy())
    y = (x * 3 - 1).realize()
    back = torch.from_dlpack(y)
    assert back.dtype == torch.bfloat16
    assert torch.equal(back, t * 3 - 1)   # PyTorch's own bfloat16 arithmetic: the same bits
    assert torch.equal(torch.exp(t), torch.from_dlpack(lt.exp(x).realize())) or \
        np.allclose(torch.exp(t).float().numpy(), lt.exp(x).numpy(), rtol=2.0 ** -7)


# ---- a differential fuzzer: random graphs of bfloat16 ops against the rounded reference -----------

FUZZ_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
               "maximum": np.maximum, "minimum": np.minimum}
FUZZ_UNARY = {"negative": np.negative, "abs": np.abs, "sqrt": lambda v: np.sqrt(np.abs(v)),
              "floor": np.floor, "square": np.square}


def random_graph(rng, leaves):
    """A random expression over `leaves` (pairs of a lazytensor value and its reference): every
    op correctly rounded in float32, so each result rounded to bfloat16 must match exactly."""
    values = list(leaves)
    for _ in range(int(rng.integers(3, 9))):
        kind = rng.integers(0, 4)
        (x, a), (y, b) = values[rng.integers(len(values))], values[rng.integers(len(values))]
        if kind == 0:
            name = sorted(FUZZ_BINARY)[rng.integers(len(FUZZ_BINARY))]
            with np.errstate(all="ignore"):
                values.append((getattr(lt, name)(x, y), rounded(FUZZ_BINARY[name](a, b))))
        elif kind == 1:
            name = sorted(FUZZ_UNARY)[rng.integers(len(FUZZ_UNARY))]
            fn = (lambda v: lt.sqrt(lt.abs(v))) if name == "sqrt" else getattr(lt, name)
            with np.errstate(all="ignore"):
                values.append((fn(x), rounded(FUZZ_UNARY[name](a))))
        elif kind == 2:   # a select and a scalar (weak: it rounds to bfloat16 first)
            c = float(rng.standard_normal())
            values.append((lt.where(x > y, x * c, y), np.where(a > b, rounded(a * rounded(c)), b)))
        else:             # a view: transposed, reversed, broadcast back
            values.append((x.T[::-1].T * 1, a.T[::-1].T))
    return values[-1]


@pytest.mark.parametrize("seed", range(12))
def test_fuzz_random_graphs_match_the_rounded_reference(device, seed):
    rng = np.random.default_rng(100 + seed)
    shapes = [(5, 7), (1, 7), (5, 1)]
    leaves = []
    for shape in shapes:
        a = bf16_values(rng, shape, scale=float(rng.choice([0.5, 3.0, 1e3])))
        leaves.append((lt.asarray(a, dtype=lt.bfloat16, device=device), a))
    got, want = random_graph(rng, leaves)
    assert got.dtype == lt.bfloat16
    np.testing.assert_array_equal(got.numpy(), np.broadcast_to(want, got.shape))
