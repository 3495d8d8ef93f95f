"""Run a module of IR text: parse, bind its weights, lower, and launch on emu or cuda.

In: IR text (graph level, lowered by a pass pipeline, default ``lower-to-cuda``; or
already at the gpu level) and the data of the weights its ``graph.weight`` /
``tmgpu.weight`` ops name but the text does not hold (``graph.constant`` data is in the
text). Out: a `ProgramRunner` that runs the compiled program on named numpy inputs and
returns its named outputs. ``tm-run`` is a thin front of this module.

    module = parse_ir(open("mlp.mlir").read(), "mlp.mlir")
    table = bind_weights(module_weights(module), {"fc.weight": w}, fill="random", seed=0)
    program, weights = compile_ir(module, table)            # lower-to-cuda, then CUDA C
    outputs = ProgramRunner(program, weights, "emu").run({"x": x})

A weight is given by an array or by a fill: ``zeros``, ``ones`` or ``random`` (float:
uniform in [-1, 1); integers: 0..3; bool: either), random data seeded by the seed and the
weight's name, so a weight gets the same data whatever else the module holds. A weight
with no data, or data of the wrong shape or dtype, is a `ProgramError` naming it.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError

from tmlir import dtypes
from tmlir.backends.cuda_c import BufferSpec, CudaProgram, emit_cuda
from tmlir.runtime.runners import make_runner

FILLS = ("zeros", "ones", "random")
DEFAULT_PIPELINE = "lower-to-cuda"
Spec = tuple[tuple[int, ...], str]
"""Shape and numpy dtype name of a weight or an input."""


class ProgramError(ValueError):
    """A user error in the IR, its pipeline, its weights or its inputs: one line."""


def parse_ir(text: str | bytes, source: str = "<input>") -> ModuleOp:
    """Parse and verify IR text; errors name ``source:line:col``."""
    from tmlir.ir.ssa import LocatingParser, verify_module
    from tmlir.registry import make_context

    if isinstance(text, bytes):
        text = text.decode()
    parser = LocatingParser(make_context(), text, source)
    try:
        module = parser.parse_module()
        verify_module(module, parser.spans)
    except (ParseError, DiagnosticException) as exc:
        raise ProgramError(one_line(exc)) from None
    return module


def one_line(exc: Exception) -> str:
    """xDSL's error text (``file:line:col``, the source line, carets, the message) as
    ``file:line:col: message``."""
    lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
    if not lines:
        return "invalid IR"
    if re.fullmatch(r".*:\d+:\d+", lines[0]):
        carets = next((i for i, line in enumerate(lines) if set(line) <= set("^~")), None)
        if carets is not None and carets + 1 < len(lines):
            return f"{lines[0]}: {lines[carets + 1]}"
    return lines[0]


def parse_pipeline(spec: str) -> tuple[ModulePass, ...]:
    """The passes of a pipeline text (``'my-pass,lower-to-cuda{fusion=false}'``), options
    typed and checked as ``tm-opt -p`` does (`tmlir.ir.pass_options`)."""
    from xdsl.transforms import get_all_passes

    from tmlir.ir.pass_options import PassOptionError, parse_passes
    from tmlir.registry import project_passes

    try:
        return parse_passes({**get_all_passes(), **project_passes()}, spec)
    except ArgSpecParseError as exc:
        reason = [line.strip() for line in str(exc).splitlines() if line.strip()]
        raise ProgramError(f"bad pass pipeline '{spec}': {reason[-1] if reason else 'malformed'}") from None
    except PassOptionError as exc:  # an unknown pass (did you mean), a bad option
        raise ProgramError(f"bad pass pipeline '{spec}': {exc}") from None


def main_function(module: ModuleOp) -> func.FuncOp:
    """The function the program runs: the module's only ``func.func`` with a body."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if len(functions) != 1:
        raise ProgramError(f"the module must hold one function to run, found {len(functions)}")
    return functions[0]


def _is_graph_level(module: ModuleOp) -> bool:
    return any(op.dialect_name() in ("graph", "tm") for op in module.walk())


def name_interface(module: ModuleOp) -> None:
    """Give a graph-level function without ``tm.inputs`` / ``tm.outputs`` names: its
    arguments' SSA names (``arg0``, ... without one) and its returned values' SSA names
    (``output0``, ``output1``, ... unless each has a name of its own)."""
    function = main_function(module)
    block = function.body.blocks[0]
    if "tm.inputs" not in function.attributes:
        names = [arg.name_hint or f"arg{i}" for i, arg in enumerate(block.args)]
        function.attributes["tm.inputs"] = ArrayAttr([StringAttr(n) for n in names])
    if "tm.outputs" not in function.attributes:
        returned = list(block.last_op.operands) if isinstance(block.last_op, func.ReturnOp) else []
        names = [v.name_hint for v in returned]
        taken = {arg.name_hint for arg in block.args}
        if not all(names) or len(set(names)) != len(names) or taken & set(names):
            names = [f"output{i}" for i in range(len(function.function_type.outputs.data))]
        function.attributes["tm.outputs"] = ArrayAttr([StringAttr(n) for n in names])


def module_weights(module: ModuleOp) -> dict[str, Spec]:
    """Name -> (shape, dtype) of every ``graph.weight`` / ``tmgpu.weight`` of `module`."""
    from tmlir.dialects import graph, tmgpu

    found: dict[str, Spec] = {}
    for op in module.walk():
        if isinstance(op, graph.WeightOp | tmgpu.WeightOp):
            type = op.result.type
            found[op.weight_name.data] = (tuple(type.get_shape()),
                                          dtypes.of_ir(type.get_element_type()).name)
    return found


def fill_array(fill: str, shape: Sequence[int], dtype: str, seed: int = 0, name: str = "") -> np.ndarray:
    """An array of `fill` (zeros, ones, random); random data depends on `seed` and `name` only."""
    dt = np.dtype(dtype)
    if fill == "zeros":
        return np.zeros(shape, dt)
    if fill == "ones":
        return np.ones(shape, dt)
    if fill != "random":
        raise ProgramError(f"unknown fill '{fill}'; expected one of {', '.join(FILLS)}")
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    if dt.kind in "iu":
        return rng.integers(0, 4, shape).astype(dt)
    return rng.uniform(-1.0, 1.0, shape).astype(dt)


def check_array(what: str, array: Any, spec: Spec) -> np.ndarray:
    """`array` as a C-contiguous array, if it has the shape and dtype of `spec`."""
    shape, dtype = spec
    array = np.asarray(array)
    if array.dtype != np.dtype(dtype) or tuple(array.shape) != tuple(shape):
        raise ProgramError(f"{what}: expected {dtype} {list(shape)}, got {array.dtype} {list(array.shape)}")
    return np.ascontiguousarray(array)


def bind_weights(specs: Mapping[str, Spec], given: Mapping[str, Any], fill: str | None = None,
                 seed: int = 0) -> dict[str, np.ndarray]:
    """The weight table: for each weight of `specs`, its array in `given` (an array, or a
    fill name), else `fill` for all missing ones; an empty weight needs no data. A given
    weight of the wrong shape or dtype, or one with no data, is a `ProgramError`."""
    table: dict[str, np.ndarray] = {}
    for name, (shape, dtype) in specs.items():
        value = given.get(name, fill)
        if isinstance(value, str):
            table[name] = fill_array(value, shape, dtype, seed, name)
        elif value is not None:
            table[name] = check_array(f"weight '{name}'", value, (shape, dtype))
        elif 0 in shape:
            table[name] = np.empty(shape, dtype)
        else:
            raise ProgramError(
                f"weight '{name}' ({dtype} {list(shape)}) has no data: give it by name "
                f"(tm-run --weight {name}=zeros|ones|random|FILE.npy, or --weights FILE.npz) "
                "or fill every missing weight (--weights random|zeros)")
    return table


def compile_ir(module: ModuleOp, weights: Mapping[str, np.ndarray] | None = None,
               pipeline: str | Sequence[ModulePass] | None = None
               ) -> tuple[CudaProgram, dict[str, np.ndarray]]:
    """Lower `module` (in place) with `pipeline` and print its CUDA program; return it and
    the weight table (`weights` and what the passes added, ``graph.constant`` data among
    them). Without a pipeline, graph-level IR goes through ``lower-to-cuda`` and gpu-level
    IR through nothing."""
    from tmlir.backends.cuda_c import CudaEmitError
    from tmlir.registry import make_context

    if _is_graph_level(module):
        name_interface(module)
    else:
        function = main_function(module)
        if "tm.outputs" not in function.attributes:
            raise ProgramError(f"@{function.sym_name.data} is at the gpu level and has no tm.outputs "
                               "attribute: which arguments are outputs is unknown")
    if pipeline is None:
        pipeline = DEFAULT_PIPELINE if _is_graph_level(module) else ""
    passes = (parse_pipeline(pipeline) if pipeline else ()) if isinstance(pipeline, str) else tuple(pipeline)
    ctx = make_context(weights=dict(weights or {}))
    try:
        for p in passes:
            p.apply(ctx, module)
        module.verify()
        left = next((op for op in module.walk() if op.dialect_name() in ("graph", "tm")), None)
        if left is not None:
            names = ",".join(p.name for p in passes) or "(none)"
            raise ProgramError(f"'{left.name}' is above the gpu level after the pipeline {names}; "
                               "end it with lower-to-cuda")
        program = emit_cuda(module)
    except (DiagnosticException, CudaEmitError) as exc:
        raise ProgramError(" ".join(str(exc).split())) from None
    return program, dict(ctx.weights or {})


class ProgramRunner:
    """A compiled program ready to run on ``emu`` or ``cuda`` (GPU 0), its inputs and
    outputs by name (``tm.inputs`` / ``tm.outputs``)."""

    def __init__(self, program: CudaProgram, weights: Mapping[str, np.ndarray], device: str = "emu",
                 check: bool | None = None) -> None:
        missing = [b.source for b in program.buffers if b.kind == "weight" and b.source not in weights]
        if missing:
            raise ProgramError(f"weight '{missing[0]}' has no data in the weight table")
        if device not in ("emu", "cuda"):
            raise ProgramError(f"unknown device '{device}'; expected emu or cuda")
        self.program = program
        arch = "sm_90"
        if device == "cuda":
            from tmlir.backends.cuda_runtime import device_arch

            arch = device_arch()
        _, self.runner = make_runner(program, weights, device, check=check, arch=arch)

    @property
    def inputs(self) -> list[BufferSpec]:
        return [b for b in self.program.buffers if b.kind == "input"]

    @property
    def outputs(self) -> list[BufferSpec]:
        return [b for b in self.program.buffers if b.kind == "output"]

    def run(self, feed: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run on `feed` (every input by name, of its shape and dtype); outputs by name."""
        known = [b.source for b in self.inputs]
        unknown = sorted(set(feed) - set(known))
        if unknown:
            raise ProgramError(f"unknown input '{unknown[0]}'; the program has {known}")
        arrays = {}
        for i, buf in enumerate(self.program.buffers):
            if buf.kind == "input":
                if buf.source not in feed:
                    raise ProgramError(f"missing input '{buf.source}'")
                arrays[i] = check_array(f"input '{buf.source}'", feed[buf.source], (buf.shape, buf.dtype))
        results = self.runner.run(arrays)
        return {self.program.buffers[i].source: np.asarray(a) for i, a in sorted(results.items())}
