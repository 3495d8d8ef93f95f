"""Which schedule template builds the kernel of a graph op: one dispatch for every template.

`kernel_for(name, op)` returns the ``tm.kernel`` of one graph op, built by its template
with the default parameters (or, for a tunable op, with the parameters a `TunedParams`
lookup returns: the tuning records of the target device, see ``tmlir/tuning``), with the
interface every template shares: the kernel's arguments are the op's operands, then its
results, as buffers (a rank-0 tensor is a one-element buffer); it reads an operand only
with ``tm.load`` and writes each element of a result once with ``tm.store``. That
interface is what post-scheduling fusion (``fusion.py``) rewrites, so every template here
takes a prologue and an epilogue.

Each family module registers its kernel builder for the op types it schedules
(``@schedules(...)``, ``registry.py``); importing this module imports them all, and
`kernel_for` looks the op's type up there. An op's templates take f32 tensors only unless
the op has the ``AnyElementType`` trait (``dialects/graph/traits.py``); f16 tensors too,
read widened to f32 and written rounded (``common.half_arguments``); f64 tensors too for
`FLOAT64_OPS`, whose templates compute in double.

=====================================  ==================================================
graph op                               template
=====================================  ==================================================
``matmul``                             ``matmul_tc.py`` (tensor cores: f16/bf16 operands,
                                       or f32 ones on an op marked ``tf32``; sm_80+),
                                       else ``matmul_gemv.py`` (at most 16 rows, B not
                                       batched; not f64), else ``matmul_simt.py`` (SIMT
                                       GEMM)
elementwise, logic, ``where``, cast    ``elementwise.py`` (one thread per element)
reductions, softmax, layer norm, pools ``reduction_ops.py`` → ``reduce.py``, ``pool.py``
``lp_pool``, ``lrn``                   ``normalization.py`` → ``pool.py``, LRN (per element)
``max_pool_with_indices``              ``pool_indices.py`` (window, best value and index)
``conv``, ``conv_transpose``, BN       ``conv.py`` (implicit GEMM, direct, elementwise);
                                       f16/bf16 2-D ``conv``: ``conv2d_tc.py`` (sm_80+)
data movement                          ``data_movement.py`` (one thread per element)
``take``, ``gather_nd``, ...           ``indexing.py`` (run-time indices)
``recurrence``                         ``recurrent.py`` (time loop in one kernel, state on chip)
``attention``                          ``attention_tc.py`` (tensor cores: f16/bf16 q, k,
                                       v, D a multiple of 16, Dv of 8; sm_80+), else
                                       ``attention.py`` (online softmax, scores on chip)
=====================================  ==================================================
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

from tmlir import dtypes
from tmlir.dialects import graph, tm
from tmlir.ir.diagnostics import errors_about_op
from tmlir.schedules import (
    attention,
    conv,
    conv2d_tc,
    data_movement,
    elementwise_functions,
    indexing,
    normalization,
    pool_indices,
    recurrent,
    reduction_ops,
)
from tmlir.schedules.common import half_arguments
from tmlir.schedules.conv import conv_problem
from tmlir.schedules.conv2d import Conv2dProblem, conv2d_kernel
from tmlir.schedules.matmul_gemv import MatmulGemvParams, matmul_gemv_kernel
from tmlir.schedules.matmul_gemv import takes as small_m_takes
from tmlir.schedules.matmul_simt import MatmulProblem, MatmulSimtParams, matmul_simt_kernel
from tmlir.schedules.matmul_tc import check_problem, matmul_tc_kernel
from tmlir.schedules.model_choice import REFERENCE_ARCH, default_of
from tmlir.schedules.registry import BuildTarget, NoTemplate, kernel_builder, wants_target
from tmlir.schedules.tc_gemm import MatmulTcParams

FAMILIES = (attention, conv, data_movement, elementwise_functions, indexing, normalization, pool_indices,
            recurrent, reduction_ops)
"""The family modules: importing one registers its kernel builders (``registry.py``), which
`kernel_for` finds by the op's type."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


#: Ops whose templates compute in their tensors' float type: f64 tensors in double too.
FLOAT64_OPS = (graph.UnaryElementwiseOp, graph.PowOp, graph.MeanOp, graph.ReduceOp,
               graph.SoftmaxBaseOp, graph.MatmulOp, graph.AveragePoolOp)


def check_element_types(op: Operation) -> None:
    """NoTemplate if `op` has a tensor neither f32 nor f16 (nor f64, for `FLOAT64_OPS`) and
    its template computes in f32 only (an f16 tensor is read widened and written rounded:
    `half_arguments`)."""
    if op.has_trait(graph.AnyElementType):
        return
    floats = (Float32Type, Float16Type, BFloat16Type, Float64Type) if isinstance(op, FLOAT64_OPS) \
        else (Float32Type, Float16Type, BFloat16Type)
    for value in (*op.operands, *op.results):
        element = value.type.get_element_type()  # type: ignore[attr-defined]
        if not isinstance(element, floats):
            allowed = "f32, f16, bf16 and f64" if len(floats) == 4 else "f32, f16 and bf16"
            raise NoTemplate(f"'{op.name}' is scheduled for {allowed} tensors only, got {value.type}")


TunableProblem = MatmulProblem | Conv2dProblem
TemplateParams = MatmulSimtParams | MatmulTcParams | MatmulGemvParams
#: Recorded parameters for a tunable kernel, given its template name, problem (see
#: `tunable_problem`) and the element type it computes on (``f32``; ``f16``, ``bf16`` or
#: ``tf32`` for the tensor-core templates); None to use the template's default.
TunedParams = Callable[[str, TunableProblem, str], TemplateParams | None]
#: The oldest compute capability with the tensor-core instructions the templates use
#: (``mma.sync`` m16n8k16, ``ldmatrix``, ``cp.async``).
TENSOR_CORE_ARCH = 80
#: The architecture assumed where none is given (``convert-graph-to-tm``'s default; the
#: latency model's defaults assume the same).
DEFAULT_ARCH = REFERENCE_ARCH
#: The unit attribute that lets an f32 ``graph.matmul`` run on tensor cores with TF32 mma
#: (``graph-mixed-precision{dtype=tf32}`` sets it): without it an f32 matmul is SIMT.
TF32_ATTR = "tf32"


def has_tensor_cores(arch: str) -> bool:
    """Whether `arch` (``sm_XY``) runs the tensor-core templates."""
    return int(arch.removeprefix("sm_")) >= TENSOR_CORE_ARCH


def tunable_problem(op: Operation, arch: str = DEFAULT_ARCH, small_m: bool = True
                    ) -> tuple[str, TunableProblem] | None:
    """The template name and problem of an op whose kernel is built from a parameter
    space (a ``graph.matmul``: ``matmul_tc`` on tensor cores when its operands are both
    f16 or both bf16 -- or both f32 and the op carries `TF32_ATTR` --, the template covers
    its shape and `arch` is sm_80 or newer, else ``matmul_gemv`` for at most 16 rows (a
    batch folded in) of an unbatched B that is not f64, else ``matmul_simt``; a 2-D
    ``graph.conv`` on implicit GEMM), else None. Without `small_m` (the schedules before the
    latency model: ``schedule-defaults=legacy``) no matmul takes ``matmul_gemv``. The problem
    is the one `kernel_for` builds the kernel from; ValueError for a convolution that cannot
    be built."""
    if not isinstance(op, graph.MatmulOp | graph.ConvOp):
        return None
    try:
        check_element_types(op)
    except NoTemplate:
        return None
    if isinstance(op, graph.MatmulOp):
        problem = MatmulProblem(
            _shape(op.lhs), _shape(op.rhs), _shape(op.result),
            (_shape(op.bias) or (1,)) if op.bias is not None else None,  # rank 0: 1 element
            op.transpose_lhs is not None, op.transpose_rhs is not None,
            op.alpha_value, op.beta_value,
        )
        if _on_tensor_cores(op, problem, arch):
            return "matmul_tc", problem
        double = isinstance(op.result.type.get_element_type(), Float64Type)  # type: ignore[attr-defined]
        return ("matmul_gemv" if small_m and small_m_takes(problem) and not double else "matmul_simt"), problem
    if isinstance(op, graph.ConvOp) and len(_shape(op.input)) == 4:
        problem = conv_problem(_shape(op.input), _shape(op.weight), *op.attributes_tuple(),
                               op.bias is not None)
        if problem.prefers_direct:
            return None
        return ("conv2d_tc" if _on_tensor_cores(op, problem, arch) else "conv2d_implicit_gemm"), problem
    return None


def _on_tensor_cores(op: graph.MatmulOp | graph.ConvOp, problem: TunableProblem, arch: str) -> bool:
    """Whether a tensor-core template builds `op` on `arch`: its two operands (lhs and rhs;
    input and weight) of one element type, f16 or bf16 -- or f32 on an op marked `TF32_ATTR`
    --, and a problem the template covers."""
    element = op.operands[0].type.get_element_type()  # type: ignore[attr-defined]
    if not has_tensor_cores(arch) or op.operands[1].type.get_element_type() != element:  # type: ignore[attr-defined]
        return False
    if isinstance(element, Float32Type) and TF32_ATTR not in op.attributes:  # TF32 is opt-in
        return False
    return tensor_cores_cover(problem, element)


def tensor_cores_cover(problem: TunableProblem, element: Attribute) -> bool:
    """Whether the tensor-core template of `problem` (``conv2d_tc`` for a convolution,
    ``matmul_tc`` otherwise) covers it with operands of `element` (its ``check_problem``)."""
    try:
        if isinstance(problem, Conv2dProblem):
            conv2d_tc.check_problem(problem, element)
        else:
            check_problem(problem, element)
    except NoTemplate:
        return False
    return True


def copied_half_operands(op: Operation, arch: str = DEFAULT_ARCH) -> frozenset[int]:
    """The f16/bf16 operands of `op` that its template copies straight from their buffers,
    16 bytes at a time (``cp.async``), unless a fused prologue computes them (`kernel_for`'s
    `prologue`: the template then gathers them element by element): both operands of a
    ``matmul_tc`` matmul, the weights of a ``conv2d_tc`` convolution whose K is a multiple of
    the chunk and its input when the im2col matrix is the input itself (a 1x1 stride-1
    convolution, `conv2d_tc.dense_input`; otherwise the input is gathered), and the q, k
    and v of an ``attention_tc`` attention (k unless it is a kᵀ whose Sk is not a multiple of
    8, ``attention_tc_params.dense_operands``). Other templates read half-precision
    operands widened, element by element, either way."""
    if isinstance(op, graph.AttentionOp):
        return _copied_attention_operands(op, arch)
    try:
        tunable = tunable_problem(op, arch)
    except ValueError:
        return frozenset()
    if tunable is None or not all(dtypes.is_narrow_float(v.type.get_element_type())  # type: ignore[attr-defined]
                                  for v in op.operands[:2]):
        return frozenset()
    template, problem = tunable
    if template == "matmul_tc":
        return frozenset({0, 1})
    if template == "conv2d_tc":
        assert isinstance(problem, Conv2dProblem)
        element = op.operands[1].type.get_element_type()  # type: ignore[attr-defined]
        return frozenset({i for i, copied in ((0, conv2d_tc.dense_input(problem, element)),
                                              (1, conv2d_tc.dense_weights(problem, element))) if copied})
    return frozenset()


def _copied_attention_operands(op: graph.AttentionOp, arch: str) -> frozenset[int]:
    """The operands of `op` that ``attention_tc`` copies by ``cp.async`` on `arch` (none
    where it does not take the op)."""
    from tmlir.schedules.attention_params import AttentionProblem
    from tmlir.schedules.attention_tc import takes
    from tmlir.schedules.attention_tc_params import dense_operands

    if not takes(op, arch):
        return frozenset()
    return dense_operands(AttentionProblem.of(op))


@errors_about_op  # tm-opt then names the op's file:line:col
def kernel_for(name: str, op: Operation, tuned: TunedParams | None = None,
               pinned: TemplateParams | None = None, arch: str = DEFAULT_ARCH,
               prologue: Collection[int] = (), small_m: bool = True) -> tm.KernelOp | None:
    """The kernel of `op` (arguments: its operands, then its results) by its template;
    None when it writes no element. A tunable op (`tunable_problem` on `arch`) gets the
    `pinned` parameters (its schedule pinned in IR, see ``pinned.py``), else those `tuned`
    returns for it, else its template's default. `prologue` names the operands a fused
    prologue will compute: a GEMM template (tensor-core or SIMT) reads them with ``tm.load``
    instead of copying them with ``cp.async``, the small-M one instead of ``tm.load_vector``
    (every other template reads operands with ``tm.load``). `small_m`: as `tunable_problem`'s.
    NoTemplate for an op without a template; ValueError for what its template cannot do."""
    check_element_types(op)
    if (tunable := tunable_problem(op, arch, small_m)) is not None:
        template, problem = tunable
        operand = op.operands[0].type.get_element_type()  # type: ignore[attr-defined]
        computed = ("tf32" if isinstance(operand, Float32Type) else str(operand)) if template.endswith("_tc") \
            else "f32"
        params = pinned or (tuned(template, problem, computed) if tuned is not None else None)
        if template == "matmul_tc":
            assert isinstance(problem, MatmulProblem)
            if params is not None and not isinstance(params, MatmulTcParams):
                raise ValueError("the parameters are the SIMT matmul's, but this matmul runs on "
                                 f"tensor cores ({computed} operands)")
            kernel = matmul_tc_kernel(name, problem, params or default_of(template, problem, computed, arch),
                                      operand, gathered=prologue)
        elif template == "conv2d_tc":
            assert isinstance(problem, Conv2dProblem)
            if params is not None and not isinstance(params, MatmulTcParams):
                raise ValueError("the parameters are the SIMT convolution's, but this convolution runs "
                                 f"on tensor cores ({computed} operands)")
            kernel = conv2d_tc.conv2d_tc_kernel(name, problem, params or default_of(template, problem, computed, arch),
                                                operand, gathered=prologue)
        elif template == "matmul_gemv":
            assert isinstance(problem, MatmulProblem)
            if params is not None and not isinstance(params, MatmulGemvParams):
                raise ValueError("the parameters are another template's, but this matmul has at most "
                                 "16 rows: it runs on matmul_gemv")
            kernel = matmul_gemv_kernel(name, problem, params or default_of(template, problem, "f32", arch), prologue)
        else:
            # f16/bf16 operands are read widened through `half_arguments`: with tm.load, as
            # those a prologue computes
            narrow = [i for i in (0, 1) if dtypes.is_narrow_float(op.operands[i].type.get_element_type())]  # type: ignore[attr-defined]
            gathered = sorted({*prologue, *narrow})
            if isinstance(problem, MatmulProblem):
                element = op.results[0].type.get_element_type()  # type: ignore[attr-defined]
                if isinstance(element, Float64Type):  # in double; records tune f32: the register path's default
                    kernel = matmul_simt_kernel(name, problem, pinned or MatmulSimtParams.legacy_default(problem),
                                                element, gathered=gathered)
                else:
                    kernel = matmul_simt_kernel(name, problem, params or default_of(template, problem, "f32", arch),
                                                gathered=gathered)
            else:
                kernel = conv2d_kernel(name, problem, params or default_of(template, problem, "f32", arch), arch,
                                       gathered=gathered)
    elif (builder := kernel_builder(type(op))) is None:
        raise NoTemplate(f"no schedule template for '{op.name}'")
    elif wants_target(builder):  # the attention: tensor cores or not by arch and operands
        kernel = builder(name, op, BuildTarget(arch, frozenset(prologue)))  # type: ignore[call-arg]
    else:
        kernel = builder(name, op)
    elements = [v.type.get_element_type() for v in (*op.operands, *op.results)]  # type: ignore[attr-defined]
    if kernel is None or not any(dtypes.is_narrow_float(e) for e in elements):
        return kernel
    if len(kernel.tensor_args) != len(elements):  # not the shared interface: no f16 view
        raise NoTemplate(f"'{op.name}' is scheduled for f32 tensors only, got f16")
    return half_arguments(kernel, elements)
