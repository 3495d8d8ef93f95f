"""Run one compiled variant of a model: its buffers placed once, its launches per `run`.

A runner is made once per input-shape signature of an `InferenceSession` and keeps what
does not change between runs: the memory plan's arena and the views cut from it, the
weights, the argument list of every launch, and (on cuda) a CUDA graph of the whole launch
sequence, captured on the first run and replayed after.

- `EmuRunner` executes the CUDA C on the CPU (emu backend); its device memory is host
  memory, so its arrays are numpy arrays.
- Both give every ``zeroed`` buffer (a kernel's counters, see ``tmlir.ir.kernel_ops``)
  memory of its own outside the arena, zeroed once and kept: each launch leaves it zero.
- `CudaRunner` executes on GPU 0 on a stream of its own. Inputs are copied into input slots
  at fixed device addresses (from host arrays, or device to device from CUDA arrays), so
  the captured graph stays valid; outputs are copied out of output slots, to the host or to
  fresh `DeviceArray`s. Weights live in a `WeightCache` owned by the session: uploaded once
  and shared by every variant.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from tmlir.backends.cuda_c import CudaProgram
from tmlir.progress import progress
from tmlir.runtime.interop import ArrayRef, ExportedArray
from tmlir.runtime.memory_plan import MemoryPlan


class DeviceArray(ExportedArray):
    """A model output in GPU memory, owned by this object.

    ``torch.from_dlpack(a)``, ``torch.as_tensor(a, device="cuda")`` and
    ``cupy.asarray(a)`` use its memory without a copy (DLPack and
    ``__cuda_array_interface__``); ``a.numpy()`` copies it to the host.
    """

    def __init__(self, buffer: Any) -> None:  # buffer: cuda_runtime.DeviceBuffer
        super().__init__(buffer.ptr, buffer.shape, buffer.dtype, "cuda", 0, owner=buffer)
        self.buffer = buffer

    def numpy(self) -> np.ndarray:
        """A host copy of the array."""
        return self.buffer.to_host()


def _host_view(arena: np.ndarray, offset: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    dtype_ = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    return arena[offset:offset + count * dtype_.itemsize].view(dtype_).reshape(shape)


#: Byte alignment emu gives every buffer a kernel sees: the widest access a kernel makes
#: (a 16-byte ``cp.async`` or vector load) needs it, and device buffers have at least it.
EMU_ALIGNMENT = 16


def aligned(array: np.ndarray) -> np.ndarray:
    """`array` itself if its data starts on `EMU_ALIGNMENT` bytes, else an aligned copy
    (a weight read from an ONNX file, or a user's view, may start anywhere)."""
    if array.ctypes.data % EMU_ALIGNMENT == 0:
        return array
    raw = np.empty(array.nbytes + EMU_ALIGNMENT, np.uint8)
    start = -raw.ctypes.data % EMU_ALIGNMENT
    copy = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


class EmuRunner:
    """One compiled variant on emu: temps in one host arena (see `MemoryPlan`).

    `fill`, when given, is the byte every arena byte starts as (tests use 0xFF, a NaN
    in every float, to prove no kernel reads a temp it did not write).

    Runs from several threads at once each take an arena of their own (kept for reuse),
    so they never share temps; a single thread reuses one arena.
    """

    def __init__(self, program: CudaProgram, weights: Mapping[str, np.ndarray], module: Any,
                 plan: MemoryPlan, fill: int | None = None) -> None:
        self.program, self.weights, self.module, self.plan = program, weights, module, plan
        self.fill = fill
        self.weight_slots = {i: aligned(np.ascontiguousarray(weights[buf.source], buf.dtype).reshape(buf.shape))
                             for i, buf in enumerate(program.buffers) if buf.kind == "weight"}
        self._lock = threading.Lock()
        self._free = [self._workspace()]

    def _workspace(self) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """A fresh arena and the slot of every buffer in it (weights shared, inputs and
        outputs None: given per run; zeroed buffers, a kernel's counters, zeros of their own,
        kept with the arena: each launch leaves them zero for the next)."""
        arena = aligned(np.empty(self.plan.arena_bytes, np.uint8))
        if self.fill is not None:
            arena.fill(self.fill)
        slots: list[np.ndarray | None] = []
        for i, buf in enumerate(self.program.buffers):
            if buf.kind == "weight":
                slots.append(self.weight_slots[i])
            elif i in self.plan.offsets:
                slots.append(_host_view(arena, self.plan.offsets[i], buf.shape, buf.dtype))
            elif buf.kind in ("temp", "zeroed"):  # a temp used by no launch, or counters
                slots.append(aligned(np.zeros(buf.shape, buf.dtype)))
            else:
                slots.append(None)
        return arena, slots

    def run(self, inputs: Mapping[int, np.ndarray], device_outputs: bool = False
            ) -> dict[int, np.ndarray]:
        """Run on `inputs` (by buffer index, checked arrays); the outputs by buffer index."""
        del device_outputs  # emu memory is host memory: outputs are numpy arrays either way
        with self._workspace_taken() as workspace:
            arrays, outputs = self._arrays(workspace, inputs)
            launches = self.program.launches
            for launch in progress(launches, "running on emu", len(launches), "kernel"):
                self.module.launch(launch.kernel, launch.grid, launch.block,
                                   [arrays[i] for i in launch.args], shared_bytes=launch.shared_bytes)
        return outputs

    def profile(self, inputs: Mapping[int, np.ndarray], runs: int, warmup: int
                ) -> list[list[float]]:
        """Seconds of each launch (host wall time around it), per run: `runs` lists of one
        time per launch, after `warmup` runs. Emu's times say nothing of a GPU's."""
        samples = []
        with self._workspace_taken() as workspace:
            arrays, _ = self._arrays(workspace, inputs)
            for run in range(warmup + runs):
                times = []
                for launch in self.program.launches:
                    args = [arrays[i] for i in launch.args]
                    start = time.perf_counter()
                    self.module.launch(launch.kernel, launch.grid, launch.block, args,
                                       shared_bytes=launch.shared_bytes)
                    times.append(time.perf_counter() - start)
                if run >= warmup:
                    samples.append(times)
        return samples

    @contextlib.contextmanager
    def _workspace_taken(self) -> Iterator[tuple[np.ndarray, list[np.ndarray | None]]]:
        """A workspace of this thread's own for the duration (reused from a finished run)."""
        with self._lock:
            workspace = self._free.pop() if self._free else None
        if workspace is None:
            workspace = self._workspace()
        try:
            yield workspace
        except BaseException:  # a launch stopped halfway may leave a kernel's counters set
            for i, buf in enumerate(self.program.buffers):
                if buf.kind == "zeroed":
                    workspace[1][i][...] = 0  # type: ignore[index]
            raise
        finally:
            with self._lock:
                self._free.append(workspace)

    def _arrays(self, workspace: tuple[np.ndarray, list[np.ndarray | None]],
                inputs: Mapping[int, np.ndarray]) -> tuple[list[np.ndarray | None], dict[int, np.ndarray]]:
        """The array of every buffer for one run (`inputs` and fresh outputs filled in),
        and the outputs by buffer index."""
        arrays = list(workspace[1])
        outputs = {}
        for i, buf in enumerate(self.program.buffers):
            if buf.kind == "input":
                arrays[i] = aligned(inputs[i])
            elif buf.kind == "output":
                arrays[i] = outputs[i] = aligned(np.zeros(buf.shape, buf.dtype))
        return arrays, outputs


class WeightCache:
    """Weights in GPU memory, uploaded once per session and shared by its variants.

    Keyed by name, shape, dtype and a digest of the data: two variants of a dynamic model
    share a weight unless shape-dependent folding gave it other values.
    """

    def __init__(self) -> None:
        self.buffers: dict[tuple, Any] = {}

    def get(self, name: str, array: np.ndarray, dtype: str, shape: tuple[int, ...]) -> Any:
        from tmlir.backends.cuda_runtime import DeviceBuffer

        host = np.ascontiguousarray(array, dtype).reshape(shape)
        key = (name, shape, dtype, hashlib.blake2b(host.data, digest_size=16).digest())
        if key not in self.buffers:
            self.buffers[key] = DeviceBuffer.from_array(host)
        return self.buffers[key]

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers.values())


class CudaRunner:
    """One compiled variant on GPU 0 (see the module docstring)."""

    def __init__(self, program: CudaProgram, weights: Mapping[str, np.ndarray], module: Any,
                 plan: MemoryPlan, weight_cache: WeightCache, stream: Any,
                 cuda_graphs: bool = True) -> None:
        from tmlir.backends.cuda_runtime import DeviceBuffer

        self.program, self.module, self.plan, self.stream = program, module, plan, stream
        self.cuda_graphs = cuda_graphs
        self.graph: Any = None
        self.arena = DeviceBuffer(max(plan.arena_bytes, 1), np.uint8)
        self.slots: list[Any] = []
        for i, buf in enumerate(program.buffers):
            if buf.kind == "weight":
                self.slots.append(weight_cache.get(buf.source, weights[buf.source], buf.dtype,
                                                   buf.shape))
            elif i in plan.offsets:
                self.slots.append(self.arena.view(plan.offsets[i], buf.shape, buf.dtype))
            else:  # inputs, outputs, temps no launch uses, zeroed counters: memory of their own
                slot = DeviceBuffer(buf.shape, buf.dtype)
                slot.fill_zero(stream)  # once: each launch leaves counters zero, graph replays too
                self.slots.append(slot)
        self.args = [[self.slots[i] for i in launch.args] for launch in program.launches]
        self.outputs = [(i, buf) for i, buf in enumerate(program.buffers) if buf.kind == "output"]
        self._lock = threading.Lock()  # runs share the input/output slots and the stream

    def _launch_all(self) -> None:
        for i in range(len(self.args)):
            self._launch(i)

    def _launch(self, i: int) -> None:
        """Queue launch `i` of the program on the runner's stream."""
        launch = self.program.launches[i]
        self.module.launch(launch.kernel, launch.grid, launch.block, self.args[i],
                           shared_bytes=launch.shared_bytes, stream=self.stream)

    def profile(self, inputs: Mapping[int, np.ndarray | ArrayRef], runs: int, warmup: int
                ) -> list[list[float]]:
        """Seconds of each launch (CUDA events around it, no graph), per run: `runs` lists
        of one time per launch, after `warmup` runs (`tmlir.runtime.profile.time_cuda_launches`)."""
        from tmlir.runtime.profile import time_cuda_launches

        with self._lock:
            self._copy_inputs(inputs)
            try:
                return time_cuda_launches(self._launch, len(self.args), self.stream, runs, warmup)
            finally:
                self._release(inputs)

    def run(self, inputs: Mapping[int, np.ndarray | ArrayRef], device_outputs: bool = False
            ) -> dict[int, np.ndarray | DeviceArray]:
        """Copy `inputs` in, run every launch (replaying the graph), copy the outputs out.
        Runs from several threads take turns (they share the slots and the stream)."""
        with self._lock:
            return self._run(inputs, device_outputs)

    def _run(self, inputs: Mapping[int, np.ndarray | ArrayRef], device_outputs: bool
             ) -> dict[int, np.ndarray | DeviceArray]:
        from tmlir.backends.cuda_runtime import DeviceBuffer, capture_graph

        self._copy_inputs(inputs)
        if not self.cuda_graphs:
            self._launch_all()
        else:
            if self.graph is None:
                self.graph = capture_graph(self.stream, self._launch_all)
            self.graph.launch(self.stream)
        outputs: dict[int, Any] = {}
        for i, buf in self.outputs:
            if device_outputs:
                out = DeviceBuffer(buf.shape, buf.dtype)
                out.copy_from_device(self.slots[i].ptr, out.nbytes, self.stream)
                outputs[i] = out
            else:
                outputs[i] = self.slots[i].to_host(self.stream)
        self.stream.synchronize()
        self._release(inputs)
        return {i: DeviceArray(o) if device_outputs else o for i, o in outputs.items()}

    def _copy_inputs(self, inputs: Mapping[int, np.ndarray | ArrayRef]) -> None:
        """Queue the copies of `inputs` into their slots on the runner's stream."""
        for i, value in inputs.items():
            slot = self.slots[i]
            if isinstance(value, ArrayRef) and value.device == "cuda":
                if value.stream is not None:  # __cuda_array_interface__'s producer stream
                    self.stream.wait_for(value.stream)
                slot.copy_from_device(value.ptr, value.nbytes, self.stream)
            else:
                slot.copy_from(_host_array(value, slot), self.stream)

    @staticmethod
    def _release(inputs: Mapping[int, np.ndarray | ArrayRef]) -> None:
        for ref in inputs.values():
            if isinstance(ref, ArrayRef):
                ref.release()


def _host_array(value: np.ndarray | ArrayRef, slot: Any) -> np.ndarray:
    """A host input as a numpy array of the slot's shape (a CPU `ArrayRef` without a copy)."""
    if isinstance(value, ArrayRef):
        return value.to_numpy().reshape(slot.shape)
    return value.reshape(slot.shape)


Runner = EmuRunner | CudaRunner


def make_runner(program: CudaProgram, weights: Mapping[str, np.ndarray], device: str, *,
                reuse: bool = True, check: bool | None = None, arch: str = "sm_90",
                cuda_state: tuple[WeightCache, Any] | None = None,
                cuda_graphs: bool = False) -> tuple[MemoryPlan, Runner]:
    """`program`'s memory plan (`reuse`: share slots between buffers whose lives do not
    overlap) and a runner on `device` (``emu``, with the sanitizer when `check`; or
    ``cuda``, its kernels compiled for `arch`, on the weight cache and stream of
    `cuda_state`, made afresh when None), after the memory guard checked that the plan fits
    (`tmlir.runtime.resources.check_memory`)."""
    from tmlir.runtime.memory_plan import plan_memory
    from tmlir.runtime.resources import check_memory

    plan = plan_memory(program, reuse=reuse)
    check_memory(program, plan, device)
    signatures = [k.signature for k in program.kernels]
    if device == "emu":
        from tmlir.backends.emu import compile_emu

        return plan, EmuRunner(program, weights, compile_emu(program.source, signatures, check), plan)
    from tmlir.backends.cuda_runtime import CudaModule, Stream
    from tmlir.backends.ptx import compile_kernels_ptx

    module = CudaModule(compile_kernels_ptx(program, arch), signatures)
    cache, stream = cuda_state if cuda_state is not None else (WeightCache(), Stream())
    return plan, CudaRunner(program, weights, module, plan, cache, stream, cuda_graphs=cuda_graphs)
