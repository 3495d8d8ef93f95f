"""``tmlir.InferenceSession``: compile an ONNX model and run it, onnxruntime-style.

    sess = tmlir.InferenceSession("mlp.onnx", device="emu")
    (y,) = sess.run(None, {"x": x})

Compilation: ONNX → graph (frontend) → ``lower-to-cuda`` → CUDA C (``cuda`` target).
``device="emu"`` runs that CUDA C on the CPU (emu backend); ``device="cuda"`` compiles it
to PTX with NVRTC and launches it with cuda-python on GPU 0. Models with dynamic input
dimensions are compiled per input-shape signature at ``run`` (see `InferenceSession`).
Each compiled variant places its intermediate buffers by a memory plan
(`tmlir.runtime.memory_plan`) and runs through a runner (`tmlir.runtime.runners`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tmlir import dtypes
from tmlir.backends.cuda_c import CudaProgram, emit_cuda
from tmlir.runtime.interop import ArrayRef, InteropError, as_array_ref
from tmlir.runtime.memory_plan import MemoryPlan
from tmlir.runtime.profile import LaunchTime
from tmlir.runtime.runners import Runner, WeightCache, make_runner

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

DEVICES = ("emu", "cuda")
PRECISIONS = ("fp32", "fp16", "bf16", "tf32")
"""``precision`` values: fp32, or fp16/bf16/tf32 for the f32 matmuls that fit the tensor-core
template (``lower-to-cuda{precision=...}``)."""
MAX_VALUE_ELEMENTS = 1024
"""The most elements a model input read when the model is compiled (a shape, axes) may
have: the session compiles the model for each value of such an input."""


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
                  fusion: bool = True, target_device: str = "", target_arch: str = "sm_90",
                  tuning_records: str | os.PathLike | None = None,
                  input_values: Mapping[str, np.ndarray] | None = None,
                  precision: str = "fp32",
                  ) -> tuple[CudaProgram, dict[str, np.ndarray]]:
    """ONNX model (path, bytes or ModelProto) → CUDA program and its weights.

    `input_shapes` fixes the shapes of dynamic inputs by name (see ``import_onnx``);
    `fusion` false compiles every graph op to a kernel of its own (``lower-to-cuda``'s
    ``fusion`` option). With a `target_device` (a GPU name as ``cuDeviceGetName`` gives
    it) and `target_arch`, tunable kernels take the parameters ``tm-tune`` recorded for
    that device in `tuning_records` (default: the standard records file; see
    docs/tuning.md); without one, every template uses its default parameters.
    `input_values` fixes the values of inputs by name (see ``import_onnx``): the program
    has them as constants, not as inputs. `precision` ``fp16`` or ``bf16`` runs the float32
    matmuls that fit the tensor-core template with half-precision operands, accumulating
    in float32 (``lower-to-cuda``'s ``precision``); ``fp32`` (the default) does not.

    A compile is cached whole (`tmlir.runtime.compile_cache`): compiling the same model
    with the same options again reads the program back instead of importing the model and
    running the passes (``TMLIR_COMPILE_CACHE=0`` turns this off).
    """
    from tmlir.runtime.compile_cache import compile_cached

    def build() -> tuple[CudaProgram, dict[str, np.ndarray]]:
        module, weights = lower_model(model, input_shapes, fusion, target_device, target_arch,
                                      tuning_records, input_values, precision)
        return emit_cuda(module), weights

    return compile_cached(model, build, input_shapes=input_shapes, fusion=fusion,
                          target_device=target_device, target_arch=target_arch,
                          tuning_records=tuning_records, input_values=input_values,
                          precision=precision)


def lower_model(model: Any, input_shapes: Mapping[str, Sequence[int]] | None = None,
                fusion: bool = True, target_device: str = "", target_arch: str = "sm_90",
                tuning_records: str | os.PathLike | None = None,
                input_values: Mapping[str, np.ndarray] | None = None,
                precision: str = "fp32") -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """ONNX model → the gpu-level module ``compile_model`` prints as CUDA C (options as
    there), and its weight table; never cached."""
    from tmlir.frontends.onnx import import_onnx
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    source = str(model) if isinstance(model, str | os.PathLike) else None
    imported = import_onnx(model, source=source, input_shapes=input_shapes,
                           input_values=input_values)
    # The context carries the weight table: graph-fold-batchnorm adds folded weights to it.
    lower = LowerToCuda(fusion=fusion, target_device=target_device, target_arch=target_arch,
                        tuning_records=str(tuning_records or ""), precision=precision)
    lower.apply(make_context(weights=imported.weights), imported.module)
    return imported.module, imported.weights


@dataclass
class _Compiled:
    """The model compiled for one set of input shapes, ready to run on the session's device;
    `shapes` and `values` are the dynamic input shapes and input values it was compiled for."""

    program: CudaProgram
    plan: MemoryPlan
    runner: Runner
    shapes: dict[str, tuple[int, ...]]
    values: dict[str, np.ndarray]

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

    Options:
    - ``fusion=False`` compiles one kernel per graph op instead of one per fusion group
      (for comparing the two; the results agree to rounding);
    - ``memory_plan=False`` gives every intermediate buffer memory of its own instead of
      reusing dead buffers' memory (`tmlir.runtime.memory_plan`; for comparing);
    - ``cuda_graphs=False`` (cuda) launches every kernel on each run instead of replaying
      the CUDA graph captured by the first run of each input-shape signature;
    - ``tuning_records`` names the file of ``tm-tune``'s records (default: the standard
      one). On cuda, tunable kernels take the parameters recorded for GPU 0 (its name and
      architecture); on emu, those recorded for ``target_device`` when one is given
      (``""``: default parameters), so emu runs the exact kernels a GPU would;
    - ``precision="fp16"`` (or ``"bf16"``) runs the float32 matmuls that fit the
      tensor-core template with half-precision operands (weights converted once, at
      compile time), accumulating and writing in float32; results then agree with fp32 to
      half precision, not to float rounding. ``"tf32"`` runs them with TF32 mma on their
      float32 operands (weights stay float32; the mma rounds its operands to a 10-bit
      mantissa). ``"fp32"`` (the default) computes in float32;
    - ``check=True`` (emu) runs every kernel under the emu sanitizer: each global and shared
      access bounds-checked, shared-memory races reported (`tmlir.backends.emu.check`);
      None (the default) follows ``$TMLIR_EMU_CHECK``.

    On cuda, the weights are uploaded once; inputs may be numpy arrays or CUDA arrays
    (torch, cupy: DLPack or ``__cuda_array_interface__``), copied device to device.

    ``run`` may be called from several threads at once: compiles of new variants take
    turns, emu runs proceed in parallel (each with its own temporary buffers), cuda runs of
    one variant take turns on the session's stream.
    """

    def __init__(self, path_or_model: Any, device: str = "emu", fusion: bool = True,
                 memory_plan: bool = True, cuda_graphs: bool = True,
                 tuning_records: str | os.PathLike | None = None, target_device: str = "",
                 target_arch: str = "sm_90", check: bool | None = None,
                 precision: str = "fp32") -> None:
        from tmlir.frontends.onnx import declared_inputs, load_model

        if device not in DEVICES:
            raise SessionError(f"unknown device '{device}'; expected one of {', '.join(DEVICES)}")
        if precision not in PRECISIONS:
            from tmlir.ir.pass_options import did_you_mean

            raise SessionError(f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}"
                               f"{did_you_mean(str(precision), PRECISIONS)}")
        self.precision = precision
        self.device = device
        self.fusion = fusion
        self.memory_plan = memory_plan
        self.cuda_graphs = cuda_graphs
        self.check = check
        self.tuning_records = tuning_records
        self.target = (target_device, target_arch)
        if device == "cuda":
            from tmlir.backends.cuda_runtime import device_arch, device_name

            self.target = (device_name(), device_arch())
        self._model = path_or_model
        proto = load_model(path_or_model,
                           str(path_or_model) if isinstance(path_or_model, str | os.PathLike) else None)
        self._declared = declared_inputs(proto)
        self._declared_outputs = [(o.name, tuple(
            d.dim_value if d.HasField("dim_value") else d.dim_param or None
            for d in o.type.tensor_type.shape.dim)) for o in proto.graph.output]
        self._types = {v.name: _declared_type(v) for v in (*proto.graph.input, *proto.graph.output)}
        self._dynamic = [name for name, dims in self._declared if not _is_static(dims)]
        self._by_value: dict[str, str] = {}
        """Inputs compiled per value -> the node that reads them (``node 'r' (Reshape)``)."""
        self._variants: dict[tuple, _Compiled] = {}
        self._compiling = threading.RLock()  # one compile at a time; runs go on in parallel
        self._current: _Compiled | None = None
        self._cuda: tuple[Any, Any] | None = None  # (WeightCache, Stream) once on cuda
        if not self._dynamic:
            from tmlir.frontends.onnx_common import RunTimeValueError

            try:
                self._current = self._variant({}, None)
            except RunTimeValueError as exc:  # compiled by run, per value of these inputs
                self._by_value.update((name, exc.where) for name in exc.inputs)

    @property
    def _deferred(self) -> bool:
        """Whether ``run`` compiles: the model has dynamic inputs or inputs read per value."""
        return bool(self._dynamic or self._by_value)

    @property
    def program(self) -> CudaProgram | None:
        """The CUDA program last compiled or run (None for a dynamic model not yet run)."""
        return self._current.program if self._current else None

    def memory_report(self) -> dict[str, Any]:
        """The memory plan of the variant last compiled or run, in numbers: ``peak_bytes``
        (the arena of intermediate buffers) against ``no_reuse_bytes`` (one allocation
        each), ``live_peak_bytes`` (the most live at one launch), input, output and weight
        bytes (see `MemoryPlan.report`)."""
        if self._current is None:
            raise SessionError("the model is compiled by its first run (dynamic inputs or inputs "
                               "read when it is compiled) and has not run yet: no plan")
        return {"device": self.device, **self._current.plan.report()}

    def get_inputs(self) -> list[IOInfo]:
        if not self._deferred:
            return [IOInfo(b.source, b.shape, _onnx_type(b.dtype)) for b in self._current.inputs]
        return [IOInfo(name, tuple(dims or ()), self._types.get(name, "tensor(float)"))
                for name, dims in self._declared]

    def get_outputs(self) -> list[IOInfo]:
        if not self._deferred:
            return [IOInfo(b.source, b.shape, _onnx_type(b.dtype)) for b in self._current.outputs]
        return [IOInfo(name, dims, self._types.get(name, "tensor(float)"))
                for name, dims in self._declared_outputs]

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any],
            device_outputs: bool = False) -> list[Any]:
        """Run the model on `input_feed`; return the requested outputs (all if None).

        Feed values are numpy arrays (or anything ``numpy.asarray`` takes) and, on cuda,
        CUDA arrays too (see `tmlir.runtime.interop`). Outputs are numpy arrays; with
        `device_outputs` on cuda, `DeviceArray`s in GPU memory (no host copy).
        """
        names = [name for name, _ in self._declared_outputs]
        wanted = list(names) if output_names is None else list(output_names)
        for name in wanted:
            if name not in names:
                raise SessionError(f"unknown output '{name}'; the model has {names}")
        compiled, inputs = self._prepare(input_feed)
        outputs = compiled.runner.run(inputs, device_outputs)
        by_name = {b.source: outputs[i] for i, b in enumerate(compiled.program.buffers)
                   if b.kind == "output"}
        return [by_name[name] for name in wanted]

    def profile(self, input_feed: Mapping[str, Any], runs: int = 20, warmup: int = 3
                ) -> list[LaunchTime]:
        """The time of each launch of the program on `input_feed` (as ``run`` takes it):
        `runs` runs after `warmup`, the kernels launched one by one without a CUDA graph
        and each timed (cuda: CUDA events; emu: the host's wall time, which says nothing of
        a GPU); per launch, in order, its kernel, template, parameters, grid, block and
        median time (`tmlir.runtime.profile`)."""
        from tmlir.runtime.profile import launch_times

        if runs < 1 or warmup < 0:
            raise SessionError(f"profile: runs must be >= 1 and warmup >= 0, got {runs} and {warmup}")
        compiled, inputs = self._prepare(input_feed)
        return launch_times(compiled.program, compiled.runner.profile(inputs, runs, warmup))

    def gpu_module(self) -> ModuleOp:
        """The gpu-level IR of the variant last compiled or run: the module whose launches
        the program makes, in the same order (for the cost report, ``tmlir.backends.cost``).
        The compile cache keeps the CUDA program, not the IR, so this lowers the model again
        with the variant's options."""
        if self._current is None:
            raise SessionError("the model is compiled by its first run (dynamic inputs or inputs "
                               "read when it is compiled) and has not run yet: no program")
        current = self._current
        module, _ = lower_model(self._model, current.shapes or None, self.fusion, *self.target,
                                self.tuning_records, current.values or None, self.precision)
        return module

    def _prepare(self, input_feed: Mapping[str, Any]
                 ) -> tuple[_Compiled, dict[int, np.ndarray | ArrayRef]]:
        """The variant for `input_feed` (compiled on first use) and its checked inputs."""
        refs = {name: self._feed_value(name, value) for name, value in input_feed.items()}
        compiled = self._variant(self._dynamic_shapes(refs), refs)
        self._current = compiled
        return compiled, self._check_inputs(compiled, {n: v for n, v in refs.items()
                                                       if n not in self._by_value})

    def _feed_value(self, name: str, value: Any) -> np.ndarray | ArrayRef:
        """A feed value as a host array, or (on cuda) an `ArrayRef` to device memory."""
        if isinstance(value, np.ndarray):
            return value
        if hasattr(value, "__cuda_array_interface__") or hasattr(value, "__dlpack__"):
            # A CUDA DLPack producer makes the data ready for the stream we read on.
            stream = int(self._cuda_state()[1].handle) if self.device == "cuda" else None
            try:
                ref = as_array_ref(value, name=f"input '{name}'", stream=stream)
            except InteropError as exc:
                raise SessionError(str(exc)) from None
            if ref.device == "cuda" and self.device != "cuda":
                ref.release()
                raise SessionError(f"input '{name}': a CUDA array, but the session runs on "
                                   f"'{self.device}'; pass a host array")
            return ref if ref.device == "cuda" else ref.to_numpy()  # a view, no copy
        return np.asarray(value)

    def _dynamic_shapes(self, feed: Mapping[str, np.ndarray | ArrayRef]
                        ) -> dict[str, tuple[int, ...]]:
        """The fed shapes of the inputs whose declared shape is not static, checked against
        what the model declares."""
        declared = dict(self._declared)
        shapes = {}
        for name in self._dynamic:
            if name not in feed:
                raise SessionError(f"missing input '{name}'")
            shape = tuple(feed[name].shape)
            dims = declared[name]
            if dims is not None and (len(dims) != len(shape) or any(
                    isinstance(d, int) and d > 0 and d != n for d, n in zip(dims, shape))):
                pretty = [d if isinstance(d, int) and d > 0 else (d or "?") for d in dims]
                raise SessionError(f"input '{name}': expected shape {pretty}, got {list(shape)}")
            shapes[name] = shape
        return shapes

    def _fed_values(self, feed: Mapping[str, np.ndarray | ArrayRef]) -> dict[str, np.ndarray]:
        """The fed values of the inputs read when the model is compiled, checked: present,
        on the host, of the declared dtype, and small."""
        values = {}
        for name, where in self._by_value.items():
            if name not in feed:
                raise SessionError(f"missing input '{name}'")
            value = feed[name]
            if not isinstance(value, np.ndarray):
                raise SessionError(f"input '{name}': its value is read when the model is compiled "
                                   f"({where} needs it): pass a host array")
            if _onnx_type(value.dtype.name) != self._types.get(name):
                raise SessionError(f"input '{name}': expected {self._types.get(name)}, got "
                                   f"{_onnx_type(value.dtype.name)}")
            if value.size > MAX_VALUE_ELEMENTS:
                raise SessionError(
                    f"input '{name}': {where} needs its value when the model is compiled, and "
                    f"the session compiles per value fed, but it has {value.size} elements "
                    f"(at most {MAX_VALUE_ELEMENTS}); make it a constant of the model instead")
            values[name] = np.array(value, order="C")  # (ascontiguousarray makes () (1,))
        return values

    def _variant(self, shapes: dict[str, tuple[int, ...]],
                 feed: Mapping[str, np.ndarray | ArrayRef] | None) -> _Compiled:
        """The model compiled for these dynamic input shapes and the fed values of the
        inputs read per value (compiled on first use). A compile that finds more inputs
        read per value (they can depend on each other's values) learns them and retries."""
        with self._compiling:
            return self._compiled_variant(shapes, feed)

    def _compiled_variant(self, shapes: dict[str, tuple[int, ...]],
                          feed: Mapping[str, np.ndarray | ArrayRef] | None) -> _Compiled:
        from tmlir.frontends.onnx_common import RunTimeValueError

        while True:
            values = self._fed_values(feed) if feed is not None else {}
            key = (tuple(sorted(shapes.items())), tuple(sorted(
                (name, v.dtype.str, v.shape, v.tobytes()) for name, v in values.items())))
            if key in self._variants:
                return self._variants[key]
            try:
                program, weights = compile_model(self._model, shapes or None, self.fusion,
                                                 *self.target, self.tuning_records,
                                                 input_values=values or None,
                                                 precision=self.precision)
            except RunTimeValueError as exc:
                new = [name for name in exc.inputs if name not in self._by_value]
                if feed is None or not new:
                    raise
                self._by_value.update((name, exc.where) for name in new)
                continue
            plan, runner = make_runner(program, weights, self.device, reuse=self.memory_plan,
                                       check=self.check, arch=self.target[1],
                                       cuda_state=self._cuda_state() if self.device == "cuda" else None,
                                       cuda_graphs=self.cuda_graphs)
            self._variants[key] = _Compiled(program, plan, runner, shapes, values)
            return self._variants[key]

    def _cuda_state(self) -> tuple[WeightCache, Any]:
        """The session's weights on the GPU and its stream (made on first use)."""
        if self._cuda is None:
            from tmlir.backends.cuda_runtime import Stream

            self._cuda = (WeightCache(), Stream())
        return self._cuda

    def _check_inputs(self, compiled: _Compiled, feed: Mapping[str, np.ndarray | ArrayRef]
                      ) -> dict[int, np.ndarray | ArrayRef]:
        """The fed inputs by buffer index, each checked against its buffer's dtype and shape."""
        expected = {b.source for b in compiled.inputs}
        unknown = set(feed) - expected
        if unknown:
            raise SessionError(f"unknown input '{min(unknown)}'; the model has {sorted(expected)}")
        inputs: dict[int, np.ndarray | ArrayRef] = {}
        for i, buf in enumerate(compiled.program.buffers):
            if buf.kind != "input":
                continue
            if buf.source not in feed:
                raise SessionError(f"missing input '{buf.source}'")
            value = feed[buf.source]
            if value.dtype != np.dtype(buf.dtype):
                raise SessionError(f"input '{buf.source}': expected {buf.dtype}, got {value.dtype}")
            # A rank-0 input is stored in a one-element buffer: accept its () shape.
            size = int(np.prod(value.shape, dtype=np.int64))
            if size != int(np.prod(buf.shape)) or (tuple(value.shape) != buf.shape and value.shape):
                raise SessionError(
                    f"input '{buf.source}': expected shape {list(buf.shape)}, got {list(value.shape)}"
                )
            if isinstance(value, np.ndarray):
                value = np.ascontiguousarray(value).reshape(buf.shape)
            inputs[i] = value
        return inputs

