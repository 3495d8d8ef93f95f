"""``tmlir.InferenceSession``: compile an ONNX model and run it, onnxruntime-style.

    sess = tmlir.InferenceSession("mlp.onnx", device="emu")
    (y,) = sess.run(None, {"x": x})

Compilation: ONNX → graph (frontend) → ``lower-to-cuda`` → CUDA C (``cuda`` target).
``device="emu"`` runs that CUDA C on the CPU (emu backend); ``device="cuda"`` compiles it
to PTX with NVRTC and launches it with cuda-python on GPU 0. Models with dynamic input
dimensions are compiled per input-shape signature at ``run`` (see `InferenceSession`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tmlir import dtypes
from tmlir.backends.cuda_c import CudaProgram, emit_cuda

DEVICES = ("emu", "cuda")


class SessionError(ValueError):
    """A bad argument to InferenceSession or run(): one line naming what was wrong."""


@dataclass(frozen=True)
class IOInfo:
    """Name, shape and element type of a model input or output (like onnxruntime's NodeArg).

    A dimension is an int, or -- for a model with dynamic inputs -- the name of a symbolic
    dimension (``"batch"``) or None, as the model declares it.
    """

    name: str
    shape: tuple[int | str | None, ...]
    type: str = "tensor(float)"


def compile_model(model: Any, input_shapes: Mapping[str, Sequence[int]] | None = None,
                  fusion: bool = True) -> tuple[CudaProgram, dict[str, np.ndarray]]:
    """ONNX model (path, bytes or ModelProto) → CUDA program and its weights.

    `input_shapes` fixes the shapes of dynamic inputs by name (see ``import_onnx``);
    `fusion` false compiles every graph op to a kernel of its own (``lower-to-cuda``'s
    ``fusion`` option).
    """
    from tmlir.frontends.onnx import import_onnx
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    source = str(model) if isinstance(model, str | os.PathLike) else None
    imported = import_onnx(model, source=source, input_shapes=input_shapes)
    # The context carries the weight table: graph-fold-batchnorm adds folded weights to it.
    LowerToCuda(fusion=fusion).apply(make_context(weights=imported.weights), imported.module)
    return emit_cuda(imported.module), imported.weights


@dataclass
class _Compiled:
    """The model compiled for one set of input shapes, loaded on the session's device."""

    program: CudaProgram
    weights: dict[str, np.ndarray]
    module: Any  # EmuModule or CudaModule

    @property
    def inputs(self) -> list:
        return [b for b in self.program.buffers if b.kind == "input"]

    @property
    def outputs(self) -> list:
        return [b for b in self.program.buffers if b.kind == "output"]


def _onnx_type(dtype: str) -> str:
    """onnxruntime's type string of a numpy dtype name: ``tensor(float)``, ``tensor(int64)``."""
    known = dtypes.from_numpy(np.dtype(dtype))
    return known.onnx_type if known is not None else f"tensor({dtype})"


def _declared_type(value: Any) -> str:
    """The type string of a declared graph input or output (``tensor(float)``, ...)."""
    known = dtypes.from_onnx(value.type.tensor_type.elem_type)
    return known.onnx_type if known is not None else "tensor(unknown)"


def _is_static(dims: tuple | None) -> bool:
    return dims is not None and all(isinstance(d, int) and d > 0 for d in dims)


class InferenceSession:
    """A compiled model; ``run`` follows ``onnxruntime.InferenceSession.run``.

    A model whose inputs all have static shapes is compiled here. One with symbolic or
    unknown input dims (``batch x 784``) is compiled by the first ``run`` for the shapes
    it is fed, and again for each new combination of input shapes; each compiled variant
    is kept, so a shape seen before runs without compiling.

    ``fusion=False`` compiles one kernel per graph op instead of one per fusion group
    (for comparing the two; the results agree to rounding).
    """

    def __init__(self, path_or_model: Any, device: str = "emu", fusion: bool = True) -> None:
        from tmlir.frontends.onnx import declared_inputs, load_model

        if device not in DEVICES:
            raise SessionError(f"unknown device '{device}'; expected one of {', '.join(DEVICES)}")
        self.device = device
        self.fusion = fusion
        self._model = path_or_model
        proto = load_model(path_or_model,
                           str(path_or_model) if isinstance(path_or_model, str | os.PathLike) else None)
        self._declared = declared_inputs(proto)
        self._declared_outputs = [(o.name, tuple(
            d.dim_value if d.HasField("dim_value") else d.dim_param or None
            for d in o.type.tensor_type.shape.dim)) for o in proto.graph.output]
        self._types = {v.name: _declared_type(v) for v in (*proto.graph.input, *proto.graph.output)}
        self._dynamic = [name for name, dims in self._declared if not _is_static(dims)]
        self._variants: dict[tuple, _Compiled] = {}
        self._current: _Compiled | None = None
        if not self._dynamic:
            self._current = self._variant({})

    @property
    def program(self) -> CudaProgram | None:
        """The CUDA program last compiled or run (None for a dynamic model not yet run)."""
        return self._current.program if self._current else None

    def get_inputs(self) -> list[IOInfo]:
        if not self._dynamic:
            return [IOInfo(b.source, b.shape, _onnx_type(b.dtype)) for b in self._current.inputs]
        return [IOInfo(name, tuple(dims or ()), self._types.get(name, "tensor(float)"))
                for name, dims in self._declared]

    def get_outputs(self) -> list[IOInfo]:
        if not self._dynamic:
            return [IOInfo(b.source, b.shape, _onnx_type(b.dtype)) for b in self._current.outputs]
        return [IOInfo(name, dims, self._types.get(name, "tensor(float)"))
                for name, dims in self._declared_outputs]

    def run(self, output_names: Sequence[str] | None,
            input_feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        """Run the model on `input_feed`; return the requested outputs (all if None)."""
        names = [name for name, _ in self._declared_outputs]
        wanted = list(names) if output_names is None else list(output_names)
        for name in wanted:
            if name not in names:
                raise SessionError(f"unknown output '{name}'; the model has {names}")
        compiled = self._variant(self._dynamic_shapes(input_feed))
        self._current = compiled
        arrays = self._host_buffers(compiled, input_feed)
        if self.device == "emu":
            for launch in compiled.program.launches:
                compiled.module.launch(launch.kernel, launch.grid, launch.block,
                                       [arrays[i] for i in launch.args])
        else:
            arrays = self._run_cuda(compiled, arrays)
        by_name = {b.source: (arrays[i], b.shape) for i, b in enumerate(compiled.program.buffers)
                   if b.kind == "output"}
        return [by_name[name][0].reshape(by_name[name][1]) for name in wanted]

    def _dynamic_shapes(self, feed: Mapping[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
        """The fed shapes of the inputs whose declared shape is not static, checked against
        what the model declares."""
        declared = dict(self._declared)
        shapes = {}
        for name in self._dynamic:
            if name not in feed:
                raise SessionError(f"missing input '{name}'")
            shape = tuple(np.shape(feed[name]))
            dims = declared[name]
            if dims is not None and (len(dims) != len(shape) or any(
                    isinstance(d, int) and d > 0 and d != n for d, n in zip(dims, shape))):
                pretty = [d if isinstance(d, int) and d > 0 else (d or "?") for d in dims]
                raise SessionError(f"input '{name}': expected shape {pretty}, got {list(shape)}")
            shapes[name] = shape
        return shapes

    def _variant(self, shapes: dict[str, tuple[int, ...]]) -> _Compiled:
        """The model compiled for these dynamic input shapes (compiled on first use)."""
        key = tuple(sorted(shapes.items()))
        if key not in self._variants:
            program, weights = compile_model(self._model, shapes or None, self.fusion)
            signatures = [k.signature for k in program.kernels]
            if self.device == "emu":
                from tmlir.backends.emu import compile_emu

                module = compile_emu(program.source, signatures)
            else:
                from tmlir.backends.cuda_runtime import CudaModule, device_arch
                from tmlir.backends.ptx import compile_ptx

                module = CudaModule(compile_ptx(program.source, device_arch()), signatures)
            self._variants[key] = _Compiled(program, weights, module)
        return self._variants[key]

    def _host_buffers(self, compiled: _Compiled, feed: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        expected = {b.source for b in compiled.inputs}
        unknown = set(feed) - expected
        if unknown:
            raise SessionError(f"unknown input '{sorted(unknown)[0]}'; the model has {sorted(expected)}")
        arrays = []
        for buf in compiled.program.buffers:
            if buf.kind == "input":
                if buf.source not in feed:
                    raise SessionError(f"missing input '{buf.source}'")
                value = np.asarray(feed[buf.source])
                if value.dtype != np.dtype(buf.dtype):
                    raise SessionError(f"input '{buf.source}': expected {buf.dtype}, "
                                       f"got {value.dtype}")
                # A rank-0 input is stored in a one-element buffer: accept its () shape.
                if value.size != int(np.prod(buf.shape)) or (value.shape != buf.shape and value.ndim):
                    raise SessionError(
                        f"input '{buf.source}': expected shape {list(buf.shape)}, got {list(value.shape)}"
                    )
                arrays.append(np.ascontiguousarray(value).reshape(buf.shape))
            elif buf.kind == "weight":
                arrays.append(np.ascontiguousarray(compiled.weights[buf.source], buf.dtype)
                              .reshape(buf.shape))
            else:
                arrays.append(np.zeros(buf.shape, buf.dtype))
        return arrays

    def _run_cuda(self, compiled: _Compiled, arrays: list[np.ndarray]) -> list[np.ndarray]:
        from tmlir.backends.cuda_runtime import DeviceBuffer

        device = [DeviceBuffer.from_array(a) for a in arrays]
        try:
            for launch in compiled.program.launches:
                compiled.module.launch(launch.kernel, launch.grid, launch.block,
                                       [device[i] for i in launch.args])
            compiled.module.synchronize()
            return [d.to_host() if b.kind == "output" else a
                    for d, a, b in zip(device, arrays, compiled.program.buffers)]
        finally:
            for d in device:
                d.free()
