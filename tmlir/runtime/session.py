"""``tmlir.InferenceSession``: compile an ONNX model and run it, onnxruntime-style.

    sess = tmlir.InferenceSession("mlp.onnx", device="emu")
    (y,) = sess.run(None, {"x": x})

Compilation: ONNX → graph (frontend) → ``lower-to-cuda`` → CUDA C (``cuda`` target).
``device="emu"`` runs that CUDA C on the CPU (emu backend); ``device="cuda"`` compiles it
to PTX with NVRTC and launches it with cuda-python on GPU 0.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tmlir.backends.cuda_c import CudaProgram, emit_cuda

DEVICES = ("emu", "cuda")


class SessionError(ValueError):
    """A bad argument to InferenceSession or run(): one line naming what was wrong."""


@dataclass(frozen=True)
class IOInfo:
    """Name, shape and element type of a model input or output (like onnxruntime's NodeArg)."""

    name: str
    shape: tuple[int, ...]
    type: str = "tensor(float)"


def compile_model(model: Any) -> tuple[CudaProgram, dict[str, np.ndarray]]:
    """ONNX model (path, bytes or ModelProto) → CUDA program and its weights."""
    from tmlir.frontends.onnx import import_onnx
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    imported = import_onnx(model, source=str(model) if isinstance(model, str | os.PathLike) else None)
    LowerToCuda().apply(make_context(), imported.module)
    return emit_cuda(imported.module), imported.weights


class InferenceSession:
    """A compiled model; ``run`` follows ``onnxruntime.InferenceSession.run``."""

    def __init__(self, path_or_model: Any, device: str = "emu") -> None:
        if device not in DEVICES:
            raise SessionError(f"unknown device '{device}'; expected one of {', '.join(DEVICES)}")
        self.device = device
        self.program, self._weights = compile_model(path_or_model)
        self._inputs = [b for b in self.program.buffers if b.kind == "input"]
        self._outputs = [b for b in self.program.buffers if b.kind == "output"]
        signatures = [k.signature for k in self.program.kernels]
        if device == "emu":
            from tmlir.backends.emu import compile_emu

            self._module = compile_emu(self.program.source, signatures)
        else:
            from tmlir.backends.cuda_runtime import CudaModule, device_arch
            from tmlir.backends.ptx import compile_ptx

            self._module = CudaModule(compile_ptx(self.program.source, device_arch()), signatures)

    def get_inputs(self) -> list[IOInfo]:
        return [IOInfo(b.source, b.shape) for b in self._inputs]

    def get_outputs(self) -> list[IOInfo]:
        return [IOInfo(b.source, b.shape) for b in self._outputs]

    def run(self, output_names: Sequence[str] | None,
            input_feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run the model on `input_feed`; return the requested outputs (all if None)."""
        names = [b.source for b in self._outputs]
        wanted = list(names) if output_names is None else list(output_names)
        for name in wanted:
            if name not in names:
                raise SessionError(f"unknown output '{name}'; the model has {names}")
        arrays = self._host_buffers(input_feed)
        if self.device == "emu":
            for launch in self.program.launches:
                self._module.launch(launch.kernel, launch.grid, launch.block,
                                    [arrays[i] for i in launch.args])
        else:
            arrays = self._run_cuda(arrays)
        by_name = {b.source: arrays[i] for i, b in enumerate(self.program.buffers)
                   if b.kind == "output"}
        return [by_name[name].reshape(self._shape_of(name)) for name in wanted]

    def _shape_of(self, output: str) -> tuple[int, ...]:
        return next(b.shape for b in self._outputs if b.source == output)

    def _host_buffers(self, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        expected = {b.source for b in self._inputs}
        unknown = set(feed) - expected
        if unknown:
            raise SessionError(f"unknown input '{sorted(unknown)[0]}'; the model has {sorted(expected)}")
        arrays = []
        for buf in self.program.buffers:
            if buf.kind == "input":
                if buf.source not in feed:
                    raise SessionError(f"missing input '{buf.source}'")
                value = np.asarray(feed[buf.source])
                if value.dtype != np.float32:
                    raise SessionError(f"input '{buf.source}': expected float32, got {value.dtype}")
                # A rank-0 input is stored in a one-element buffer: accept its () shape.
                if value.size != int(np.prod(buf.shape)) or (value.shape != buf.shape and value.ndim):
                    raise SessionError(
                        f"input '{buf.source}': expected shape {list(buf.shape)}, got {list(value.shape)}"
                    )
                arrays.append(np.ascontiguousarray(value).reshape(buf.shape))
            elif buf.kind == "weight":
                arrays.append(np.ascontiguousarray(self._weights[buf.source], np.float32).reshape(buf.shape))
            else:
                arrays.append(np.zeros(buf.shape, np.float32))
        return arrays

    def _run_cuda(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        from tmlir.backends.cuda_runtime import DeviceBuffer

        device = [DeviceBuffer.from_array(a) for a in arrays]
        try:
            for launch in self.program.launches:
                self._module.launch(launch.kernel, launch.grid, launch.block,
                                    [device[i] for i in launch.args])
            self._module.synchronize()
            return [d.to_host() if b.kind == "output" else a
                    for d, a, b in zip(device, arrays, self.program.buffers)]
        finally:
            for d in device:
                d.free()
