"""`CudaRunner`'s orchestration, checked on the CPU with a stand-in for the driver.

No GPU is needed: `tmlir.backends.cuda_runtime`'s `DeviceBuffer` and `capture_graph` are
replaced by host-memory doubles (device pointers are host addresses; a "launch" runs the
kernel on emu; capture records launches without running them and a graph launch replays
them), so these tests check what the runner does with the driver -- slots at fixed
addresses, arena views, weights uploaded once, copies in and out, one capture per variant,
replays that see new inputs -- and not the driver itself (the `gpu` tests do that).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from models import mlp

from tmlir.backends import cuda_runtime
from tmlir.backends.emu import compile_emu
from tmlir.runtime.interop import ArrayRef
from tmlir.runtime.memory_plan import plan_memory
from tmlir.runtime.runners import CudaRunner, DeviceArray, EmuRunner, WeightCache
from tmlir.runtime.session import compile_model


class HostBuffer:
    """`DeviceBuffer`'s interface over host memory, starting as 0xFF bytes (NaN floats)."""

    uploads = 0

    def __init__(self, shape, dtype) -> None:
        self.shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.dtype = np.dtype(dtype)
        nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        self.array = np.full(nbytes, 0xFF, np.uint8).view(self.dtype).reshape(self.shape)
        self.nbytes = self.array.nbytes
        self.ptr = self.array.ctypes.data

    @classmethod
    def from_array(cls, a):
        buf = cls(a.shape, a.dtype)
        buf.array[...] = a
        HostBuffer.uploads += 1
        return buf

    def view(self, offset, shape, dtype):
        view = object.__new__(HostBuffer)
        view.shape, view.dtype = tuple(shape), np.dtype(dtype)
        count = int(np.prod(view.shape))
        flat = self.array.reshape(-1).view(np.uint8)
        view.array = flat[offset:offset + count * view.dtype.itemsize].view(view.dtype).reshape(shape)
        view.nbytes, view.ptr = view.array.nbytes, view.array.ctypes.data
        return view

    def fill_zero(self, stream=None):
        self.array[...] = 0

    def copy_from(self, a, stream=None):
        self.array[...] = a

    def copy_from_device(self, ptr, nbytes, stream=None):
        assert nbytes == self.nbytes
        ctypes.memmove(self.ptr, ptr, nbytes)

    def to_host(self, stream=None):
        return self.array.copy()


class HostStream:
    def __init__(self) -> None:
        self.recording: list | None = None
        self.waited: list[int] = []
        self.handle = 7

    def wait_for(self, producer):
        self.waited.append(producer)

    def synchronize(self):
        pass


class HostModule:
    """Launches on emu, or records them while its stream is being captured."""

    def __init__(self, emu, stream: HostStream) -> None:
        self.emu, self.stream, self.launches = emu, stream, 0

    def launch(self, name, grid, block, args, shared_bytes=0, stream=None):
        assert stream is self.stream, "every launch goes to the session's stream"
        arrays = [a.array for a in args]

        def run():
            self.launches += 1
            self.emu.launch(name, grid, block, arrays, shared_bytes)

        if stream.recording is not None:
            stream.recording.append(run)
        else:
            run()


class HostGraph:
    def __init__(self, steps) -> None:
        self.steps = steps

    def launch(self, stream):
        for step in self.steps:
            step()


captures: list[HostGraph] = []


def host_capture(stream, record):
    stream.recording = []
    record()
    graph = HostGraph(stream.recording)
    stream.recording = None
    captures.append(graph)
    return graph


@pytest.fixture
def host_driver(monkeypatch):
    monkeypatch.setattr(cuda_runtime, "DeviceBuffer", HostBuffer)
    monkeypatch.setattr(cuda_runtime, "capture_graph", host_capture)
    captures.clear()
    HostBuffer.uploads = 0


@pytest.fixture(scope="module")
def compiled():
    program, weights = compile_model(mlp(4, (32, 64, 64, 64, 8)))
    emu = compile_emu(program.source, [k.signature for k in program.kernels])
    return program, weights, emu


def reference(compiled, x):
    program, weights, emu = compiled
    runner = EmuRunner(program, weights, emu, plan_memory(program, reuse=False))
    (out,) = runner.run({0: x}).values()
    return out


def make_runner(compiled, graphs: bool, cache: WeightCache | None = None):
    program, weights, emu = compiled
    stream = HostStream()
    module = HostModule(emu, stream)
    plan = plan_memory(program)
    assert plan.arena_bytes < plan.no_reuse_bytes  # the arena really is shared
    return CudaRunner(program, weights, module, plan, cache or WeightCache(), stream,
                      cuda_graphs=graphs), module


@pytest.mark.parametrize("graphs", [True, False], ids=["graph", "launches"])
def test_runs_match_emu_and_see_new_inputs(host_driver, compiled, graphs):
    runner, module = make_runner(compiled, graphs)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((4, 32)).astype(np.float32)
        (out,) = runner.run({0: x}).values()
        np.testing.assert_array_equal(out, reference(compiled, x))
    launches = len(compiled[0].launches)
    assert module.launches == 3 * launches
    assert len(captures) == (1 if graphs else 0)  # captured once, replayed after


def test_weights_upload_once_per_session(host_driver, compiled):
    cache = WeightCache()
    first, _ = make_runner(compiled, True, cache)
    uploads = HostBuffer.uploads
    weights = sum(1 for b in compiled[0].buffers if b.kind == "weight")
    assert uploads == weights
    first.run({0: np.ones((4, 32), np.float32)})
    second, _ = make_runner(compiled, True, cache)  # another variant of the same session
    second.run({0: np.ones((4, 32), np.float32)})
    assert HostBuffer.uploads == uploads


def test_device_inputs_and_outputs(host_driver, compiled):
    runner, _ = make_runner(compiled, True)
    x = np.random.default_rng(1).standard_normal((4, 32)).astype(np.float32)
    ref = ArrayRef(x.ctypes.data, x.shape, x.dtype, "cuda", stream=5, owner=x)
    (out,) = runner.run({0: ref}, device_outputs=True).values()
    assert isinstance(out, DeviceArray) and runner.stream.waited == [5]
    assert out.__cuda_array_interface__["shape"] == (4, 8)
    np.testing.assert_array_equal(out.numpy(), reference(compiled, x))
    # Each run's device outputs are new arrays: the next run does not overwrite them.
    kept = out.numpy()
    runner.run({0: np.zeros((4, 32), np.float32)}, device_outputs=True)
    np.testing.assert_array_equal(out.numpy(), kept)
