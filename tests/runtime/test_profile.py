"""Per-launch times (`InferenceSession.profile`, `tmlir.runtime.profile`) and the gpu-level
module of a session (`InferenceSession.gpu_module`), which the cost report reads.

On emu the times are the host's, so these tests check the bookkeeping: one time per
launch, in launch order, with the kernel, template, parameters, grid and block of that
launch. The cuda path's orchestration (a spin kernel first, an event between consecutive
launches on the runner's stream) is checked with the host doubles of `test_cuda_runner`;
the spin kernel itself compiles to PTX here. What a GPU measures is checked by the GPU
suite (docs/gpu.md).
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np
import pytest
from models import dynamic_mlp, mlp
from test_cuda_runner import HostBuffer, HostModule, HostStream, host_driver  # noqa: F401

import tmlir
from tmlir.backends import cuda_runtime
from tmlir.backends.cost import cost_report
from tmlir.backends.cuda_c import emit_cuda
from tmlir.backends.emu import compile_emu
from tmlir.backends.ptx import compile_ptx, ptx_kernel_names
from tmlir.runtime import profile
from tmlir.runtime.memory_plan import plan_memory
from tmlir.runtime.runners import CudaRunner, EmuRunner, WeightCache
from tmlir.runtime.session import SessionError, compile_model

DIMS = (32, 64, 64, 8)


@pytest.fixture(scope="module")
def session() -> tmlir.InferenceSession:
    return tmlir.InferenceSession(mlp(4, DIMS), device="emu")


def feed() -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(0).standard_normal((4, DIMS[0])).astype(np.float32)}


def test_emu_profile_times_every_launch_in_order(session) -> None:
    (before,) = session.run(None, feed())
    times = session.profile(feed(), runs=3, warmup=1)
    program = session.program
    assert [t.index for t in times] == list(range(len(program.launches)))
    for t, launch, kernel in zip(times, program.launches, program.launched(), strict=True):
        assert (t.kernel, t.grid, t.block) == (launch.kernel, launch.grid, launch.block)
        assert (t.template, t.params) == (kernel.template, kernel.params)
        assert t.runs == 3 and 0 < t.min_us <= t.median_us
    assert any(t.template == "matmul_gemv" and {"block_m", "block_n", "block_k"} <= set(t.params)
               for t in times)  # 4 rows: the small-M template
    (after,) = session.run(None, feed())  # profiling left the session as it was
    np.testing.assert_array_equal(before, after)


def test_profile_rejects_bad_counts(session) -> None:
    with pytest.raises(SessionError, match="runs must be >= 1"):
        session.profile(feed(), runs=0)


def test_launch_times_need_one_time_per_launch(session) -> None:
    with pytest.raises(ValueError, match="launch times each"):
        profile.launch_times(session.program, [[1e-6]])


class HostEvent:
    """`Event` over the host clock: the doubles' launches run when queued."""

    recorded: ClassVar[list[tuple[int, HostStream]]] = []

    def __init__(self) -> None:
        self.at = None

    def record(self, stream=None):
        self.at = time.perf_counter()
        HostEvent.recorded.append((id(self), stream))

    def synchronize(self):
        assert self.at is not None

    def elapsed_ms(self, end):
        return (end.at - self.at) * 1e3

    def destroy(self):
        pass


class SpinModule:
    spins: ClassVar[list[int]] = []

    def launch(self, name, grid, block, args, stream=None):
        assert (name, grid, block) == (profile.SPIN_KERNEL, 1, 1)
        SpinModule.spins.append(args[0])


def test_cuda_profile_spins_then_times_each_launch_between_events(host_driver, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setattr(cuda_runtime, "Event", HostEvent)
    monkeypatch.setattr(profile, "_spin_module", lambda: SpinModule())
    HostEvent.recorded, SpinModule.spins = [], []
    program, weights = compile_model(mlp(4, DIMS))
    emu = compile_emu(program.source, [k.signature for k in program.kernels])
    stream = HostStream()
    module = HostModule(emu, stream)
    runner = CudaRunner(program, weights, module, plan_memory(program), WeightCache(), stream)
    x = feed()["x"]
    samples = runner.profile({0: x}, runs=4, warmup=2)
    count = len(program.launches)
    assert len(samples) == 4 and all(len(run) == count and min(run) > 0 for run in samples)
    # two unspun runs (loading, then the host's queueing time), then warm-up and timed runs, each spun
    assert len(SpinModule.spins) == 2 + 4 and min(SpinModule.spins) >= 50_000
    assert module.launches == 8 * count
    assert len(HostEvent.recorded) == 8 * (count + 1)
    assert all(stream_ is stream for _, stream_ in HostEvent.recorded)
    # the launches ran on the inputs: a run after profiling gives the emu's answer
    reference = EmuRunner(program, weights, emu, plan_memory(program))
    (want,) = reference.run({0: x}).values()
    (got,) = runner.run({0: x}).values()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_spin_kernel_compiles(arch) -> None:
    assert ptx_kernel_names(compile_ptx(profile.SPIN_SOURCE, arch)) == [profile.SPIN_KERNEL]


def test_gpu_module_is_the_program_the_session_launches(session) -> None:
    module = session.gpu_module()
    assert emit_cuda(module).source == session.program.source
    cost = cost_report(module)
    assert [(k.kernel, k.grid, k.block) for k in cost.launches] == [
        (launch.kernel, launch.grid, launch.block) for launch in session.program.launches]


def test_gpu_module_of_a_dynamic_model_is_the_variant_run() -> None:
    session = tmlir.InferenceSession(dynamic_mlp(), device="emu")
    with pytest.raises(SessionError, match="has not run yet"):
        session.gpu_module()
    session.run(None, {"x": np.ones((3, 8), np.float32)})
    assert emit_cuda(session.gpu_module()).source == session.program.source
