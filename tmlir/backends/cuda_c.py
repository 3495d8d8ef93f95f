"""The ``cuda`` target: tmgpu-level IR to CUDA C text plus launch metadata.

Each ``tmgpu.kernel`` becomes an ``extern "C" __global__`` function headed by a comment
naming its schedule template and parameters; the host ``func.func`` becomes the launch
plan (:class:`CudaProgram`: buffers and ordered launches) and, for nvcc users, a host
function guarded by ``#if defined(__CUDACC__) && !defined(__CUDACC_RTC__)`` so that NVRTC
and the emu backend's g++ never see it. Pure arithmetic used once is inlined into the
expression that uses it; values with IR names become named variables, so the text reads
like hand-written CUDA. Kernel pointer parameters are ``__restrict__``: the compiler never
passes one buffer twice to a kernel. Indices are ``int``, or ``long long`` in a kernel of
``index_bits(64)`` (see ``convert-tm-to-gpu``), where a constant index times a stride is
folded: no ``int`` product of two literals overflows. A ``tmgpu.load_vector`` is one
statement, ``const float4 w = *reinterpret_cast<const float4*>(&W[idx]);`` (``float2``;
``uint4``/``uint2`` holding 16-bit floats), whose elements are ``w.x``, ``w.y``, ...

**Shared memory.** A kernel's ``tmgpu.shared_alloc``s print as ``__shared__`` arrays while
they total at most 48 KiB, the static limit. Past it they are one block of dynamic shared
memory: ``extern __shared__ __align__(16) unsigned char tmlir_dynamic_smem[];`` and each
array a typed view into it at a 16-byte aligned offset (`shared_offsets`), e.g. ``float
(&a_smem)[4224] = *reinterpret_cast<float (*)[4224]>(tmlir_dynamic_smem + 16896);``, so the
accesses read as before. The printer derives this from the total (no attribute says it); the
launch metadata carries the byte count (`KernelInfo.dynamic_shared_bytes`,
`LaunchSpec.shared_bytes`), which a runtime passes at launch after raising the kernel's
limit (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``). The emu backend gives every
worker one such buffer (``tmlir_emu.h``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import IO, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.target import Target

from tmlir import dtypes
from tmlir.backends.cuda_types import (  # noqa: F401  (c_type, float_literal: this module's API)
    NARROW_INTEGERS,
    CudaEmitError,
    c_type,
    float_conversion,
    float_literal,
    int_literal,
    math_function,
    prelude,
    unsigned_constant,
    vector_element,
    vector_type,
)
from tmlir.backends.hopper import hopper_call, unsupported_op, wgmma_alignment
from tmlir.backends.kernel_abi import KernelParam, KernelSignature
from tmlir.backends.tensor_core import shared_alignment, tensor_core_call
from tmlir.dialects import tmgpu
from tmlir.gpu_limits import MAX_STATIC_SHARED_BYTES
from tmlir.ir.arith_ext import RemFOp
from tmlir.ir.diagnostics import attach_op

_BINARY = {
    arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.DivUIOp: "/",
    arith.DivSIOp: "/", arith.RemUIOp: "%", arith.RemSIOp: "%", arith.AndIOp: "&&",
    arith.OrIOp: "||", arith.XOrIOp: "^", arith.AddfOp: "+", arith.SubfOp: "-", arith.MulfOp: "*",
    arith.DivfOp: "/", arith.ShLIOp: "<<", arith.ShRSIOp: ">>", arith.ShRUIOp: ">>",
}
_BITWISE = {arith.AndIOp: "&", arith.OrIOp: "|"}  # on integers; `_BINARY`'s are for bools
_CMP = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
        "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
_CMPF = {"oeq": "==", "one": "!=", "olt": "<", "ole": "<=", "ogt": ">", "oge": ">=",
         "ueq": "==", "une": "!=", "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}
_CALLS = {
    xmath.ExpOp: "expf", xmath.TanhOp: "tanhf", xmath.LogOp: "logf", xmath.SqrtOp: "sqrtf",
    xmath.AbsFOp: "fabsf", xmath.ErfOp: "erff", xmath.PowFOp: "powf", xmath.FloorOp: "floorf",
    xmath.CeilOp: "ceilf", xmath.RsqrtOp: "rsqrtf", xmath.Log1pOp: "log1pf",
    xmath.ExpM1Op: "expm1f", arith.MaximumfOp: "fmaxf",
    arith.MinimumfOp: "fminf", arith.MaxnumfOp: "fmaxf", arith.MinnumfOp: "fminf",
    xmath.SinOp: "sinf", xmath.CosOp: "cosf", xmath.TanOp: "tanf", xmath.AsinOp: "asinf",
    xmath.AcosOp: "acosf", xmath.AtanOp: "atanf", xmath.SinhOp: "sinhf", xmath.CoshOp: "coshf",
    xmath.AsinhOp: "asinhf", xmath.AcoshOp: "acoshf", xmath.AtanhOp: "atanhf",
    xmath.RoundEvenOp: "rintf", xmath.CopySignOp: "copysignf", RemFOp: "fmodf",
}
_SHUFFLES = {"xor": "__shfl_xor_sync", "down": "__shfl_down_sync", "up": "__shfl_up_sync",
             "idx": "__shfl_sync"}
_CASTS = (arith.IndexCastOp, arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp,
          arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
_FLOAT_CONVERSIONS = (arith.ExtFOp, arith.TruncFOp)
#: Same-width integer conversions between signed and unsigned (``schedules/elementwise_logic.py``).
_SIGN_CASTS = (UnrealizedConversionCastOp,)
_PURE = (*_BINARY, arith.CmpiOp, arith.CmpfOp, arith.SelectOp, arith.NegfOp,
         arith.ConstantOp, *_CASTS, *_FLOAT_CONVERSIONS, *_SIGN_CASTS, *_CALLS)


#: The dynamic shared memory of a kernel whose shared arrays exceed the static limit.
DYNAMIC_SHARED = "tmlir_dynamic_smem"
#: Alignment of each shared array in dynamic shared memory (cp.async, ldmatrix rows).
SHARED_ALIGNMENT = 16


@dataclass(frozen=True)
class KernelInfo:
    """A kernel of the program: signature, threads per block, schedule template, its own
    CUDA C (`source`: comment header and function, compilable alone) and the bytes of
    dynamic shared memory it takes at launch (0: its shared arrays are static)."""

    signature: KernelSignature
    block: int
    template: str
    params: dict[str, int | float | str]
    source: str = ""
    dynamic_shared_bytes: int = 0


@dataclass(frozen=True)
class BufferSpec:
    """A device buffer of the launch plan. `kind`: input, output, weight, temp, zeroed (a
    kernel's counters: zero before the first launch, left zero by every launch, a buffer
    of its own kept from run to run) or argument (an argument of a host function that does
    not say which are inputs and outputs)."""

    name: str
    shape: tuple[int, ...]
    kind: str
    source: str  # ONNX input/output name, weight name, or "" for temps
    dtype: str = "float32"  # numpy name of the element type (see tmlir.dtypes)


@dataclass(frozen=True)
class LaunchSpec:
    """One kernel launch; `args` index into CudaProgram.buffers; `shared_bytes` of dynamic
    shared memory (the kernel's `KernelInfo.dynamic_shared_bytes`)."""

    kernel: str
    grid: int
    block: int
    args: tuple[int, ...]
    shared_bytes: int = 0


@dataclass(frozen=True)
class CudaProgram:
    """CUDA C source and everything needed to run it."""

    source: str
    kernels: tuple[KernelInfo, ...]
    buffers: tuple[BufferSpec, ...]
    launches: tuple[LaunchSpec, ...]

    def kernel(self, name: str) -> KernelInfo:
        return next(k for k in self.kernels if k.signature.name == name)

    def launched(self) -> list[KernelInfo]:
        """The kernel of each launch, in launch order (groups of the same structure launch
        one kernel: ``convert-graph-to-tm`` builds each distinct kernel once)."""
        by_name = {k.signature.name: k for k in self.kernels}
        return [by_name[launch.kernel] for launch in self.launches]


@dataclass
class _Names:
    """Unique C identifiers from IR name hints."""

    used: set[str] = field(default_factory=set)

    def fresh(self, hint: str | None, prefix: str = "v") -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint) if hint else prefix
        if not re.match(r"[A-Za-z_]", base):
            base = f"{prefix}{base}"
        name, n = base, 1
        while name in self.used or name in _RESERVED:
            name, n = f"{base}_{n}", n + 1
        self.used.add(name)
        return name


_RESERVED = {"int", "float", "bool", "for", "if", "else", "return", "const", "void", "char",
             "double", "long", "short", "unsigned", "signed", "auto", "break", "continue",
             "case", "default", "do", "while", "switch", "static", "struct", "union"}


def element_bytes(type) -> int:
    """Bytes of one element of IR type `type` (a bool is one byte)."""
    element = dtypes.from_ir(type)
    if element is None:
        raise CudaEmitError(f"the CUDA printer does not know the size of {type}")
    return element.numpy.itemsize


def shared_offsets(kernel: tmgpu.KernelOp) -> tuple[dict[SSAValue, int], int]:
    """The byte offset of each shared array of `kernel` in one block of shared memory, in
    the order they are allocated, each `SHARED_ALIGNMENT`-aligned (1024 for a swizzled wgmma
    operand: tmlir.backends.hopper.wgmma_alignment), and the block's bytes."""
    offsets: dict[SSAValue, int] = {}
    total = 0
    for op in kernel.walk():
        if isinstance(op, tmgpu.SharedAllocOp):
            align = max(SHARED_ALIGNMENT, wgmma_alignment(op.result))
            start = -(-total // align) * align
            offsets[op.result] = start
            total = start + math.prod(op.result.type.get_shape()) * element_bytes(op.result.type.element_type)
    return offsets, total


def dynamic_shared_bytes(kernel: tmgpu.KernelOp) -> int:
    """Bytes of dynamic shared memory `kernel` takes: its shared arrays' total when that
    exceeds the static 48 KiB, else 0 (they are static ``__shared__`` arrays)."""
    static = sum(math.prod(op.result.type.get_shape()) * element_bytes(op.result.type.element_type)
                 for op in kernel.walk() if isinstance(op, tmgpu.SharedAllocOp))
    if static <= MAX_STATIC_SHARED_BYTES:
        return 0
    return shared_offsets(kernel)[1]


class _KernelPrinter:
    """Prints one tmgpu.kernel as a CUDA C function."""

    def __init__(self, kernel: tmgpu.KernelOp) -> None:
        self.kernel = kernel
        self.index = "long long" if kernel.wide_index else "int"
        self.names = _Names({DYNAMIC_SHARED})
        self.values: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self.indent = 1
        self.dynamic_bytes = dynamic_shared_bytes(kernel)  # at most MAX_SHARED_BYTES: the kernel verifies it
        self.offsets = shared_offsets(kernel)[0] if self.dynamic_bytes else {}
        self.dynamic_declared = False

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.indent + line)

    def c_type(self, type) -> str:  # with this kernel's C type of `index`
        return c_type(type, self.index)

    def signature(self) -> KernelSignature:
        params = []
        stored = {op.memref for op in self.kernel.walk() if isinstance(op, memref.StoreOp | tmgpu.AtomicAddOp)}
        for arg in self.kernel.body.block.args:
            name = self.names.fresh(arg.name_hint, "arg")
            self.values[arg] = name
            elem = self.c_type(arg.type.element_type)
            params.append(KernelParam(name, f"{elem}*" if arg in stored else f"const {elem}*"))
        return KernelSignature(self.kernel.sym_name.data, tuple(params))

    def print(self) -> tuple[KernelSignature, str]:
        sig = self.signature()
        self.print_block(self.kernel.body.block)
        params = ", ".join(f"{p.ctype} __restrict__ {p.name}" for p in sig.params)
        header = _kernel_comment(self.kernel)
        # tm.min_blocks_per_sm (tensor-core kernels): ptxas plans for that many resident blocks
        min_blocks = self.kernel.attributes.get("tm.min_blocks_per_sm")
        bounds = f"{self.kernel.block.data}, {min_blocks.value.data}" if isinstance(min_blocks, IntegerAttr) \
            else f"{self.kernel.block.data}"
        text = (f"{header}extern \"C\" __global__ void __launch_bounds__({bounds}) "
                f"{sig.name}({params}) {{\n" + "\n".join(self.lines) + "\n}\n")
        return sig, text

    # ---- expressions ---------------------------------------------------------------
    def inlined(self, value: SSAValue) -> bool:
        op = value.owner
        if isinstance(op, arith.ConstantOp) or unsigned_constant(op) is not None:
            return True
        uses = list(value.uses)
        if value.name_hint is not None or len(uses) != 1:
            return False
        if isinstance(op, memref.LoadOp):  # read right where it is used: no store in between
            return uses[0].operation is op.next_op
        return isinstance(op, _PURE) and uses[0].operation.parent_block() is op.parent_block()

    def expr(self, value: SSAValue) -> str:
        if value in self.values:
            return self.values[value]
        op = value.owner
        assert isinstance(op, Operation), f"unprinted value {value}"
        return self.op_expr(op)

    def op_expr(self, op: Operation) -> str:
        e = self.expr
        match op:
            case arith.ConstantOp():
                value = op.value
                if isinstance(value, FloatAttr):
                    return float_literal(value.value.data, value.type)
                if isinstance(value, IntegerAttr):
                    return int_literal(value.value.data, self.c_type(value.type))
            case memref.LoadOp():
                return self.access(op.memref, op.indices)
            case arith.CmpiOp():
                return f"({e(op.lhs)} {_CMP[arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]]} {e(op.rhs)})"
            case arith.CmpfOp():
                return f"({e(op.lhs)} {_CMPF[arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]]} {e(op.rhs)})"
            case arith.SelectOp():
                return f"({e(op.cond)} ? {e(op.lhs)} : {e(op.rhs)})"
            case arith.NegfOp():
                return f"(-{e(op.operand)})"
            case arith.IndexCastOp() if (constant := unsigned_constant(op)) is not None:
                return constant
            case _ if isinstance(op, _CASTS):
                target = self.c_type(op.result.type)
                if target == self.c_type(op.input.type):  # index <-> i32 (or i64 when wide)
                    return e(op.input)
                return f"(({target}){e(op.input)})"
            case UnrealizedConversionCastOp():
                return f"(({self.c_type(op.results[0].type)}){e(op.inputs[0])})"
            case _ if isinstance(op, _FLOAT_CONVERSIONS):
                return float_conversion(op.input.type, op.result.type, _strip(e(op.input)))
            case _ if type(op) in _BINARY:
                result = self.c_type(op.results[0].type)
                lhs, rhs = e(op.operands[0]), e(op.operands[1])
                symbol = _BINARY[type(op)] if result == "bool" else _BITWISE.get(type(op), _BINARY[type(op)])
                if result not in NARROW_INTEGERS:
                    return f"({lhs} {symbol} {rhs})"
                # computed in int or unsigned int, converted back: wraps as ONNX's do
                return f"(({result})(({NARROW_INTEGERS[result]}){lhs} {symbol} {rhs}))"
            case _ if type(op) in _CALLS:
                function = math_function(_CALLS[type(op)], op.results[0].type)
                return f"{function}({', '.join(_strip(e(o)) for o in op.operands)})"
        raise CudaEmitError(f"the CUDA printer does not support '{op.name}'")

    def bind(self, value: SSAValue, text: str, *, const: bool = True) -> None:
        name = self.names.fresh(value.name_hint)
        qualifier = "const " if const else ""
        self.emit(f"{qualifier}{self.c_type(value.type)} {name} = {_strip(text)};")
        self.values[value] = name

    def access(self, buffer: SSAValue, indices) -> str:
        idx = [self.expr(i) for i in indices]
        if isinstance(buffer.owner, (tmgpu.SharedAllocOp, tmgpu.LocalAllocOp)):
            return self.values[buffer] + "".join(f"[{_strip(i)}]" for i in idx)
        shape = buffer.type.get_shape()
        terms = []
        for d, i in enumerate(idx):
            stride = math.prod(shape[d + 1:])
            if self.kernel.wide_index and re.fullmatch(r"-?\d+(LL)?", i):  # no int * int overflow
                i, stride = int_literal(int(i.removesuffix("LL")) * stride, self.index), 1
            if i != "0":
                terms.append(i if stride == 1 else f"{i} * {int_literal(stride, self.index)}")
        return f"{self.values[buffer]}[{_strip(' + '.join(terms) or '0')}]"

    # ---- statements ----------------------------------------------------------------
    def print_block(self, block: Block) -> None:
        for op in block.ops:
            self.print_op(op)

    def print_op(self, op: Operation) -> None:
        match op:
            case _ if isinstance(op, _PURE):
                if not op.results[0].uses:
                    return
                if not self.inlined(op.results[0]):
                    self.bind(op.results[0], self.op_expr(op))
            case tmgpu.ThreadIdOp() | tmgpu.BlockIdOp() | tmgpu.GridDimOp():
                builtin = {tmgpu.ThreadIdOp: "threadIdx", tmgpu.BlockIdOp: "blockIdx",
                           tmgpu.GridDimOp: "gridDim"}[type(op)]
                self.values[op.result] = self.names.fresh(op.result.name_hint, "id")
                self.emit(f"const {self.index} {self.values[op.result]} = {builtin}.{op.dim.data};")
            case tmgpu.SharedAllocOp() if self.dynamic_bytes:
                self.print_dynamic_shared(op)
            case tmgpu.SharedAllocOp() | tmgpu.LocalAllocOp():
                name = self.names.fresh(op.result.name_hint, "buf")
                self.values[op.result] = name
                dims = "".join(f"[{d}]" for d in op.result.type.get_shape())
                ctype = self.c_type(op.result.type.element_type)
                shared = isinstance(op, tmgpu.SharedAllocOp)
                align = shared_alignment(op.result, ctype) if shared else ""
                self.emit(f"{'__shared__ ' if shared else ''}{ctype} {name}{dims}{align};")
            case tmgpu.BarrierOp():
                self.emit("__syncthreads();")
            case tmgpu.ShuffleOp():  # a warp-wide statement, always in program order
                width = f", {op.width.data}" if op.width.data != 32 else ""
                self.bind(op.result, f"{_SHUFFLES[op.mode.data]}(0xffffffffu, "
                                     f"{_strip(self.expr(op.value))}, {op.offset.data}{width})")
            case tmgpu.MmaOp() | tmgpu.LdmatrixOp() | tmgpu.CpAsyncOp() | tmgpu.CpAsyncCommitOp() \
                    | tmgpu.CpAsyncWaitOp():  # warp- or thread-level statements, in program order
                self.emit(tensor_core_call(op, self.access, self.c_type, self.expr))
            case tmgpu.WgmmaDescOp():  # a value: the descriptor of a shared tile
                self.bind(op.result, hopper_call(op, self.access, self.expr))
            case _ if isinstance(op, tmgpu.HOPPER_OPS):  # warpgroup-, thread- or block-level, in program order
                for line in hopper_call(op, self.access, self.expr).split("\n"):
                    self.emit(line)
            case tmgpu.AtomicAddOp():  # global memory shared with other blocks: in program order
                self.bind(op.result, f"atomicAdd(&{self.access(op.memref, op.indices)}, "
                                     f"{_strip(self.expr(op.value))})")
            case tmgpu.LoadCgOp():
                self.bind(op.result, f"__ldcg(&{self.access(op.memref, op.indices)})")
            case tmgpu.FenceOp():
                self.emit("__threadfence();")
            case memref.LoadOp():
                if not self.inlined(op.res):
                    self.bind(op.res, self.access(op.memref, op.indices))
            case tmgpu.LoadVectorOp():  # one access, in program order; its elements by name
                element = op.memref.type.element_type
                ctype = vector_type(element, op.width)
                hint = op.res[0].name_hint
                name = self.names.fresh(f"{hint}_vec" if hint else "vec")
                self.emit(f"const {ctype} {name} = *reinterpret_cast<const {ctype}*>"
                          f"(&{self.access(op.memref, op.indices)});")
                for index, result in enumerate(op.res):
                    self.values[result] = vector_element(name, element, index)
            case memref.StoreOp():
                self.emit(f"{self.access(op.memref, op.indices)} = {_strip(self.expr(op.value))};")
            case scf.ForOp():
                self.print_for(op)
            case scf.IfOp():
                self.print_if(op)
            case scf.YieldOp():
                for target, value in zip(self._yield_targets, op.arguments):
                    self.emit(f"{target} = {_strip(self.expr(value))};")
            case _:
                raise CudaEmitError(f"the CUDA printer does not support '{op.name}' in a kernel")

    _yield_targets: tuple[str, ...] = ()

    def print_dynamic_shared(self, op: tmgpu.SharedAllocOp) -> None:
        """A shared array as a typed view into the kernel's dynamic shared memory (the
        ``extern`` declaration before the first one)."""
        if not self.dynamic_declared:
            arrays = sum(isinstance(o, tmgpu.SharedAllocOp) for o in self.kernel.walk())
            align = max([SHARED_ALIGNMENT, *(wgmma_alignment(o.result) for o in self.kernel.walk()
                                              if isinstance(o, tmgpu.SharedAllocOp))])
            self.emit(f"extern __shared__ __align__({align}) unsigned char {DYNAMIC_SHARED}[];  "
                      f"// {self.dynamic_bytes} bytes of dynamic shared memory: {arrays} arrays")
            self.dynamic_declared = True
        name = self.names.fresh(op.result.name_hint, "buf")
        self.values[op.result] = name
        dims = "".join(f"[{d}]" for d in op.result.type.get_shape())
        ctype = self.c_type(op.result.type.element_type)
        offset = self.offsets[op.result]
        base = f"{DYNAMIC_SHARED} + {offset}" if offset else DYNAMIC_SHARED
        self.emit(f"{ctype} (&{name}){dims} = *reinterpret_cast<{ctype} (*){dims}>({base});")

    def print_for(self, op: scf.ForOp) -> None:
        if op.iter_args:
            raise CudaEmitError("scf.for with iter_args is not supported by the CUDA printer")
        iv = op.body.block.args[0]
        name = self.names.fresh(iv.name_hint, "i")
        self.values[iv] = name
        if "tm.unroll" in op.attributes:
            self.emit("#pragma unroll")
        elif "tm.no_unroll" in op.attributes:
            self.emit("#pragma unroll 1")
        step = self.expr(op.step)
        inc = f"++{name}" if step == "1" else f"{name} += {_strip(step)}"
        self.emit(f"for ({self.index} {name} = {_strip(self.expr(op.lb))}; {name} < "
                  f"{_strip(self.expr(op.ub))}; {inc}) {{")
        self.nested(op.body.block, ())
        self.emit("}")

    def print_if(self, op: scf.IfOp) -> None:
        targets = []
        for result in op.results:
            name = self.names.fresh(result.name_hint)
            self.values[result] = name
            self.emit(f"{self.c_type(result.type)} {name};")
            targets.append(name)
        self.emit(f"if ({_strip(self.expr(op.cond))}) {{")
        self.nested(op.true_region.block, tuple(targets))
        if op.false_region.blocks and (targets or list(op.false_region.block.ops)[:-1]):
            self.emit("} else {")
            self.nested(op.false_region.block, tuple(targets))
        self.emit("}")

    def nested(self, block: Block, targets: tuple[str, ...]) -> None:
        saved = self._yield_targets
        self._yield_targets = targets
        self.indent += 1
        self.print_block(block)
        self.indent -= 1
        self._yield_targets = saved


def _strip(text: str) -> str:
    """Drop one pair of redundant outer parentheses."""
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(text) - 1:
                return text
        return text[1:-1]
    return text


def _params(kernel: tmgpu.KernelOp) -> tuple[str, dict[str, int | float | str]]:
    template = kernel.attributes.get("tm.template")
    params = kernel.attributes.get("tm.params")
    values: dict[str, int | float | str] = {}
    if isinstance(params, DictionaryAttr):
        for key, attr in params.data.items():
            if isinstance(attr, IntegerAttr):
                values[key] = attr.value.data
            elif isinstance(attr, FloatAttr):
                values[key] = attr.value.data
            elif isinstance(attr, StringAttr):
                values[key] = attr.data
    return (template.data if isinstance(template, StringAttr) else "hand-written"), values


def _kernel_comment(kernel: tmgpu.KernelOp) -> str:
    template, params = _params(kernel)
    listed = ", ".join(f"{k}={v}" for k, v in params.items())
    fused = kernel.attributes.get("tm.fused")
    fused_line = f"//   fused {fused.data}\n" if isinstance(fused, StringAttr) else ""
    wide = ", 64-bit indices" if kernel.wide_index else ""
    return (f"// Kernel {kernel.sym_name.data}: schedule template '{template}'"
            f"{f' ({listed})' if listed else ''}, {kernel.block.data} threads per block{wide}\n"
            + fused_line)


def _plan(function: func.FuncOp, shared_bytes: dict[str, int]):
    block = function.body.block
    names = _Names()
    inputs = _string_list(function, "tm.inputs")
    outputs = _string_list(function, "tm.outputs")
    # Arguments: inputs, then outputs (destination passing), named by tm.inputs/tm.outputs;
    # a hand-written host function without those attributes has plain "argument"s.
    n_in = len(block.args) - len(outputs)
    buffers: list[BufferSpec] = []
    index: dict[SSAValue, int] = {}

    def add(value: SSAValue, kind: str, source: str) -> None:
        index[value] = len(buffers)
        buffers.append(BufferSpec(names.fresh(value.name_hint, "buf"),
                                  tuple(value.type.get_shape()), kind, source,
                                  dtypes.of_ir(value.type.element_type).name))

    for i, arg in enumerate(block.args):
        if not inputs and not outputs:
            add(arg, "argument", "")
        elif i < n_in:
            add(arg, "input", inputs[i] if i < len(inputs) else "")
        else:
            add(arg, "output", outputs[i - n_in])
    launches = []
    for op in block.ops:
        match op:
            case tmgpu.WeightOp():
                add(op.result, "weight", op.weight_name.data)
            case tmgpu.AllocOp():
                add(op.result, "zeroed" if op.zeroed is not None else "temp", "")
            case tmgpu.ViewOp():  # the same device buffer, another shape
                index[op.result] = index[op.source]
            case tmgpu.LaunchOp():
                name = op.kernel.string_value()
                launches.append(LaunchSpec(name, op.grid.data, op.block.data,
                                           tuple(index[a] for a in op.args), shared_bytes.get(name, 0)))
            case func.ReturnOp():
                pass
            case _:
                raise CudaEmitError(f"the CUDA printer does not support '{op.name}' on the host")
    return tuple(buffers), tuple(launches)


def _string_list(function: func.FuncOp, key: str) -> list[str]:
    attr = function.attributes.get(key)
    return [s.data for s in attr.data] if attr is not None else []


def _host_code(buffers: tuple[BufferSpec, ...], launches: tuple[LaunchSpec, ...]) -> str:
    lines = ["#if defined(__CUDACC__) && !defined(__CUDACC_RTC__)",
             "// Host launch sequence. buffers[i] are device pointers:"]
    ctypes = [dtypes.from_numpy(np.dtype(buf.dtype)).c for buf in buffers]  # type: ignore[union-attr]
    for i, (buf, ctype) in enumerate(zip(buffers, ctypes)):
        shape = "x".join(map(str, buf.shape))
        origin = f" {buf.source!r}" if buf.source else ""
        lines.append(f"//   [{i}] {buf.name}: {ctype}[{shape}] ({buf.kind}{origin})")
    if any(buf.kind == "zeroed" for buf in buffers):
        lines.append("// zeroed buffers must be zero before the first run; every run leaves them zero.")
    lines.append('extern "C" void tmlir_run(void* const* buffers, cudaStream_t stream) {')
    raised = set()
    for launch in launches:
        args = ", ".join(f"({ctypes[a]}*)buffers[{a}]" for a in launch.args)
        if launch.shared_bytes and launch.kernel not in raised:  # past 48 KiB: opt in
            lines.append(f"  cudaFuncSetAttribute({launch.kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
                         f"{launch.shared_bytes});")
            raised.add(launch.kernel)
        lines.append(f"  {launch.kernel}<<<{launch.grid}, {launch.block}, {launch.shared_bytes}, stream>>>({args});")
    lines += ["}", "#endif"]
    return "\n".join(lines) + "\n"


def above_gpu_level(module: ModuleOp) -> Operation | None:
    """The first ``graph`` or ``tm`` op left in `module` (None at the gpu level): the
    targets that print or compile CUDA C name it (as the op their error is about)."""
    return next((op for op in module.walk() if op.dialect_name() in ("tm", "graph")), None)


def emit_cuda(module: ModuleOp, arch: str | None = None) -> CudaProgram:
    """CUDA C and launch plan of a tmgpu-level module (see ``lower-to-cuda``). With a target
    `arch` (``sm_80``, ``sm_90a``, ...), an op that arch lacks (Hopper's wgmma needs sm_90a,
    its mbarrier transactions and bulk copies sm_90) is refused with one line; without one,
    the source is for any arch (and the prelude's ``#error`` stops a compile for one that
    lacks a primitive it uses)."""
    leftover = above_gpu_level(module)
    if leftover is not None:
        raise attach_op(CudaEmitError(f"'{leftover.name}' is above the gpu level; "
                                      "run -p lower-to-cuda before -t cuda"), leftover)
    missing = None if arch is None else unsupported_op(list(module.walk()), arch)
    if missing is not None:
        op, required = missing
        raise attach_op(CudaEmitError(f"'{op.name}' needs target arch {required}"
                                      f"{' (wgmma is sm_90a-specific)' if required == 'sm_90a' else ' or later'}"
                                      f", not {arch}"), op)
    chunks = ["// Generated by tmlir: CUDA C for NVRTC/nvcc (sm_80+) and the emu backend.\n"]
    kernels: dict[str, KernelInfo] = {}
    for op in module.ops:
        if isinstance(op, tmgpu.KernelOp):
            sig, text = _KernelPrinter(op).print()
            template, params = _params(op)
            types = prelude(text)
            alone = f"{types}\n{text}" if types else text
            kernels[sig.name] = KernelInfo(sig, op.block.data, template, params, alone,
                                           dynamic_shared_bytes(op))
            chunks.append(text)
    types = prelude("".join(chunks[1:]))
    if types:
        chunks.insert(1, types)
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    buffers: tuple[BufferSpec, ...] = ()
    launches: tuple[LaunchSpec, ...] = ()
    if functions:
        buffers, launches = _plan(functions[0], {name: k.dynamic_shared_bytes for name, k in kernels.items()})
        chunks.append(_host_code(buffers, launches))
    return CudaProgram("\n".join(chunks), tuple(kernels.values()), buffers, launches)


@dataclass(frozen=True)
class CudaTarget(Target):
    """``-t cuda``: print the CUDA C of a gpu-level module."""

    name: ClassVar[str] = "cuda"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_cuda(module).source)
