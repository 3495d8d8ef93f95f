"""The emu sanitizer (``compile_emu(..., check=True)``): planted bugs are caught with the
right kernel, block, thread, buffer and index; the same kernels fixed, and kernels tmlir
generates, run clean under it and give the same results."""

from __future__ import annotations

import re

import numpy as np
import pytest
from models import make_model
from onnx import helper

import tmlir
from tmlir.backends.emu import EmuError, EmuModule, compile_emu
from tmlir.backends.emu.check import CheckedEmuModule, instrument
from tmlir.backends.kernel_abi import KernelParam, KernelSignature


def sig(name: str, *params: str) -> KernelSignature:
    """A KernelSignature from "ctype name" strings."""
    return KernelSignature(name, tuple(KernelParam(p.rsplit(" ", 1)[1], p.rsplit(" ", 1)[0])
                                       for p in params))


# Each planted bug next to its fix; all in one source, compiled once.
PLANTED = """
extern "C" __global__ void __launch_bounds__(128) shift_bug(const float* __restrict__ x,
    float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i + 1] = x[i];  // off by one: the last thread stores past the end
  }
}
extern "C" __global__ void __launch_bounds__(128) shift_fixed(const float* __restrict__ x,
    float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i + 1 < n) {
    y[i + 1] = x[i];
  }
}
extern "C" __global__ void __launch_bounds__(64) neighbour_bug(const float* __restrict__ x,
    float* __restrict__ y) {
  __shared__ float s[64];
  const int t = threadIdx.x, i = blockIdx.x * 64 + t;
  s[t] = x[i];
  y[i] = s[(t + 63) % 64];  // no __syncthreads() between: reads a neighbour's element
}
extern "C" __global__ void __launch_bounds__(64) neighbour_fixed(const float* __restrict__ x,
    float* __restrict__ y) {
  __shared__ float s[64];
  const int t = threadIdx.x, i = blockIdx.x * 64 + t;
  s[t] = x[i];
  __syncthreads();
  y[i] = s[(t + 63) % 64];
}
extern "C" __global__ void __launch_bounds__(128) scale_bug(const float* __restrict__ x,
    float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = 2.0f * x[i];  // no bounds guard: the partial last block runs past n
}
extern "C" __global__ void __launch_bounds__(128) scale_fixed(const float* __restrict__ x,
    float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    y[i] = 2.0f * x[i];
  }
}
extern "C" __global__ void __launch_bounds__(64) tile_bug(float* __restrict__ y) {
  __shared__ int tile[2][32];
  const int t = threadIdx.x;
  tile[t / 32][t % 32 + 8] = t;  // the column runs past 32
  __syncthreads();
  y[t] = (float)tile[t / 32][t % 24];
}
// Lanes of one warp exchange through shared memory, ordered by __syncwarp (no race); the
// second warp then reads the first warp's elements with only __syncwarp (a race).
extern "C" __global__ void __launch_bounds__(64) warp_pairs(const float* __restrict__ x,
    float* __restrict__ y, int across) {
  __shared__ float s[64];
  const int t = threadIdx.x;
  s[t] = x[t];
  __syncwarp();
  float v = s[t ^ 1] + __shfl_xor_sync(0xffffffffu, s[t], 1);
  if (across) {
    v += s[(t + 32) % 64];
  }
  y[t] = v;
}
"""
SIGS = [sig(f"{name}_{kind}", "const float* x", "float* y", "int n")
        for name in ("shift", "scale") for kind in ("bug", "fixed")]
SIGS += [sig(f"neighbour_{kind}", "const float* x", "float* y") for kind in ("bug", "fixed")]
SIGS += [sig("tile_bug", "float* y"), sig("warp_pairs", "const float* x", "float* y", "int across")]


@pytest.fixture(scope="module")
def planted() -> EmuModule:
    module = compile_emu(PLANTED, SIGS, check=True)
    assert isinstance(module, CheckedEmuModule)
    return module


def data(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n, dtype=np.float32), np.zeros(n, np.float32)


def test_off_by_one_store_is_caught(planted: EmuModule) -> None:
    x, y = data(256)
    with pytest.raises(EmuError, match=r"^kernel 'shift_bug': emu check: block \(1,0,0\) thread "
                       r"\(127,0,0\): out-of-bounds store to 'y' at index 256 \(buffer has 256 "
                       r"elements\)$"):
        planted.launch("shift_bug", 2, 128, [x, y, 256])
    np.testing.assert_array_equal(y[1:], x[:-1])  # the stores in bounds happened
    x, y = data(256)
    planted.launch("shift_fixed", 2, 128, [x, y, 256])
    np.testing.assert_array_equal(y[1:], x[:-1])


def test_missing_barrier_is_a_race(planted: EmuModule) -> None:
    x, y = data(128)
    with pytest.raises(EmuError, match=r"^kernel 'neighbour_bug': emu check: block \(0,0,0\) "
                       r"thread \(1,0,0\): shared-memory race on 's'\[0\]: read by thread \(1,0,0\) "
                       r"after a write by thread \(0,0,0\) with no __syncthreads\(\) between "
                       r"\(and \d+ more violations\)$"):
        planted.launch("neighbour_bug", 2, 64, [x, y])
    x, y = data(128)
    planted.launch("neighbour_fixed", 2, 64, [x, y])
    np.testing.assert_array_equal(y.reshape(2, 64), np.roll(x.reshape(2, 64), 1, axis=1))


def test_missing_guard_in_partial_last_block(planted: EmuModule) -> None:
    x, y = data(300)  # 3 blocks of 128: threads 44..127 of the last are past the end
    with pytest.raises(EmuError, match=r"^kernel 'scale_bug': emu check: block \(2,0,0\) thread "
                       r"\(44,0,0\): out-of-bounds load from 'x' at index 300 \(buffer has 300 "
                       r"elements\) \(and 167 more violations\)$"):
        planted.launch("scale_bug", 3, 128, [x, y, 300])
    x, y = data(300)
    planted.launch("scale_fixed", 3, 128, [x, y, 300])
    np.testing.assert_array_equal(y, 2 * x)


def test_shared_index_past_its_dimension(planted: EmuModule) -> None:
    with pytest.raises(EmuError, match=r"block \(0,0,0\) thread \(24,0,0\): out-of-bounds store to "
                       r"__shared__ 'tile': index 32 of dimension 1 \(shape \[2\]\[32\]\)"):
        planted.launch("tile_bug", 1, 64, [np.zeros(64, np.float32)])


def test_warp_barriers_order_lanes_of_one_warp_only(planted: EmuModule) -> None:
    x, y = data(64)
    planted.launch("warp_pairs", 1, 64, [x, y, 0])
    np.testing.assert_array_equal(y, x[np.arange(64) ^ 1] + x[np.arange(64) ^ 1])
    with pytest.raises(EmuError, match=r"thread \(0,0,0\): shared-memory race on 's'\[32\]: read "
                       r"by thread \(0,0,0\) after a write by thread \(32,0,0\)|thread \(32,0,0\): "
                       r"shared-memory race on 's'\[32\]: write by thread \(32,0,0\) after a read"):
        planted.launch("warp_pairs", 1, 64, [x, y, 1])


def test_planted_race_in_our_matmul_is_flagged() -> None:
    """tests/e2e/test_planted_race.py's matmul (the register path) without its prologue
    barrier: the sanitizer names the race instead of a wrong result. (Writes of cp.async
    copies are not race-checked: the pipeline's missing barrier is a wrong result.)"""
    from e2e.test_planted_race import matmul_output

    import tmlir.backends.emu.emu as emu

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(emu.CHECK_ENV, "1")
        with pytest.raises(EmuError, match=r"kernel 'matmul_0': emu check: block \(0,0,0\) thread "
                           r"\(\d+,0,0\): shared-memory race on 'a_smem'"):
            matmul_output(remove_barrier=0, arch="sm_75")
        got, want = matmul_output(remove_barrier=None, arch="sm_75")
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_generated_model_runs_clean_under_check() -> None:
    """A small model (matmul, bias, softmax: shared-memory matmul and warp reductions) runs
    under the sanitizer with the same outputs as without."""
    model = make_model([helper.make_node("MatMul", ["x", "w"], ["h"]),
                        helper.make_node("Add", ["h", "b"], ["z"]),
                        helper.make_node("Softmax", ["z"], ["y"], axis=-1)],
                       {"x": (24, 40), "w": (40, 72), "b": (72,)}, {"y": (24, 72)})
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((24, 40), np.float32),
            "w": rng.standard_normal((40, 72), np.float32),
            "b": rng.standard_normal(72, np.float32)}
    checked = tmlir.InferenceSession(model.SerializeToString(), device="emu", check=True)
    assert isinstance(checked._current.runner.module, CheckedEmuModule)
    plain = tmlir.InferenceSession(model.SerializeToString(), device="emu", check=False)
    assert not isinstance(plain._current.runner.module, CheckedEmuModule)
    np.testing.assert_array_equal(checked.run(None, feed)[0], plain.run(None, feed)[0])


def test_environment_variable_turns_check_on(planted: EmuModule, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMLIR_EMU_CHECK", "1")
    assert isinstance(compile_emu(PLANTED, SIGS), CheckedEmuModule)
    plain = compile_emu(PLANTED, SIGS, check=False)
    assert not isinstance(plain, CheckedEmuModule) and plain.path != planted.path
    monkeypatch.setenv("TMLIR_EMU_CHECK", "0")
    assert not isinstance(compile_emu(PLANTED, SIGS), CheckedEmuModule)
    x, y = data(300)
    plain.launch("scale_fixed", 3, 128, [x, y, 300])  # launches take the kernel's own arguments
    np.testing.assert_array_equal(y, 2 * x)


def test_launch_arguments_are_checked_as_without_sanitizer(planted: EmuModule) -> None:
    x, y = data(8)
    with pytest.raises(EmuError, match=r"kernel 'scale_fixed' takes 3 arguments \(x, y, n\), got 2"):
        planted.launch("scale_fixed", 1, 8, [x, y])
    with pytest.raises(EmuError, match=r"parameter 'x' \(const float\*\) expects a numpy array"):
        planted.launch("scale_fixed", 1, 8, [1.0, y, 8])
    with pytest.raises(EmuError, match=r"unknown kernel 'nope'"):
        planted.launch("nope", 1, 8, [])


def test_instrument_rewrites_our_form() -> None:
    source = ('extern "C" __global__ void __launch_bounds__(32) k(const unsigned char* __restrict__ a,\n'
              "    float* __restrict__ b, int n) {\n  __shared__ float b_smem[2][8][32];\n"
              "  __shared__ unsigned char flags[4];\n}\n")
    out = instrument(source, [sig("k", "const unsigned char* a", "float* b", "int n")])
    assert "k(::tmlir_emu::check::GlobalRef<const unsigned char> a,\n" in out
    assert "::tmlir_emu::check::GlobalRef<float> b, int n)" in out
    assert ("__shared__ ::tmlir_emu::check::SharedArray<float, 2, 8, 32> b_smem_tmlir_check; "
            'const auto b_smem = ::tmlir_emu::check::shared_view(b_smem_tmlir_check, "b_smem");') in out
    assert "SharedArray<unsigned char, 4> flags_tmlir_check;" in out


@pytest.mark.parametrize("kernel, error", [
    (sig("absent", "float* y"), "no `__global__ ... absent(` definition"),
    (sig("k", "float* y"), "does not match its 1 parameters"),
    (sig("k", "float* q", "int n"), "parameter 'q' (float*) is declared as 'float* __restrict__ y'"),
])
def test_instrument_refuses_a_signature_that_does_not_match(kernel: KernelSignature,
                                                            error: str) -> None:
    source = 'extern "C" __global__ void k(float* __restrict__ y, int n) {}\n'
    with pytest.raises(EmuError, match=f"^emu check: kernel '{kernel.name}': .*{re.escape(error)}"):
        instrument(source, [kernel])
