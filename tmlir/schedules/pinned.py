"""Schedules pinned in IR, and template defaults changed by pass options.

In: a graph op that carries a ``schedule`` attribute, a dictionary of template parameters
keyed by the names ``tm-space`` prints (integers as integers, pairs as
``array<i64: a, b>``)::

    %c = graph.matmul %a, %b {schedule = {block_warps = array<i64: 2, 2>,
                                          lanes = array<i64: 8, 4>, block_k = 16}} : ...

or the text of a ``convert-graph-to-tm`` option, the same parameters as ``name=value``
words (pairs as ``AxB``): ``matmul="block_warps=2x2 lanes=8x4 block_k=16"``. Out: the
template's parameter object (`MatmulSimtParams`, `MatmulGemvParams` for a matmul of at
most 16 rows: ``{schedule = {warps = 4, vector = 4, unroll = 2, block_n = 4}}``, or
`MatmulTcParams` for a matmul on tensor cores: ``{schedule = {block_m = 64, block_n = 64,
block_k = 32, warps = array<i64: 2, 2>, stages = 3}}``), or one line naming the op and the
parameter that is wrong. A parameter left out takes its value from the template's default
candidate for the op's problem; a name the space does not have, a value of the wrong type
or outside the space's choices, and a candidate that breaks one of its constraints for
the op's problem are errors (`Space.pin`). Only tunable ops have parameters to pin
(`templates.tunable_problem`: ``graph.matmul`` and 2-D ``graph.conv`` on implicit GEMM);
in a ``graph.fused`` group the anchor carries the attribute.

The dialects cannot check the attribute (they sit below the schedules), so
`verify_schedules` is the check: ``convert-graph-to-tm`` runs it on the whole module, for
its target arch, before converting anything, and a driver may run it right after parsing
(names, types and choices only: the constraints depend on the arch, which the pipeline
names later).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation

from tmlir.dialects import graph
from tmlir.ir.diagnostics import OpError
from tmlir.schedules.conv2d import Conv2dProblem
from tmlir.schedules.matmul_gemv import MATMUL_GEMV_SPACE, MatmulGemvParams
from tmlir.schedules.matmul_simt import MATMUL_SIMT_SPACE, MatmulProblem, MatmulSimtParams
from tmlir.schedules.matmul_tc import MATMUL_TC_SPACE
from tmlir.schedules.model_choice import rule_default, template_space
from tmlir.schedules.space import Space, value_text
from tmlir.schedules.templates import DEFAULT_ARCH, TemplateParams, TunableProblem, tunable_problem

#: The attribute of a graph op naming its schedule's parameters.
SCHEDULE_ATTR = "schedule"
#: The space of each tunable template where no architecture is named (the SIMT ones take
#: `MatmulSimtParams` on a GEMM problem, sm_80's limits; the small-M one `MatmulGemvParams`;
#: the tensor-core ones `MatmulTcParams`): names and choices. `space_of` has the one of an
#: element type and arch.
SPACES: dict[str, Space] = {
    "matmul_simt": MATMUL_SIMT_SPACE, "conv2d_implicit_gemm": MATMUL_SIMT_SPACE, "matmul_tc": MATMUL_TC_SPACE,
    "conv2d_tc": MATMUL_TC_SPACE, "matmul_gemv": MATMUL_GEMV_SPACE,
}
#: The ``convert-graph-to-tm`` option that changes each template's defaults.
OPTIONS = {"matmul_simt": "matmul", "conv2d_implicit_gemm": "conv", "matmul_gemv": "gemv"}
Values = Mapping[str, int | tuple[int, ...]]


def gemm_problem(problem: TunableProblem) -> MatmulProblem:
    """The GEMM a tunable kernel's parameters are chosen for (a convolution's implied one)."""
    return problem.gemm if isinstance(problem, Conv2dProblem) else problem


def space_of(template: str, element: str = "f16", arch: str | None = None) -> Space:
    """The space of `template` for operands of `element` on `arch` (`model_choice.template_space`)."""
    return template_space(template, element, arch)


def resolve(template: str, problem: TunableProblem, values: Values, element: str = "f16",
            arch: str | None = None) -> TemplateParams:
    """The rule default of `template` for `problem` (operands of `element`) on `arch`
    (`model_choice.rule_default`, not the latency model's choice: a pin means the same
    whatever the model's constants) with `values` in place, checked (ValueError naming the
    parameter or the broken constraint)."""
    gemm = gemm_problem(problem)
    return space_of(template, element, arch).pin(rule_default(template, problem, element, arch), values, gemm)


def values_from_attr(attr: Attribute, space: Space = MATMUL_SIMT_SPACE) -> dict[str, int | tuple[int, ...]]:
    """The parameters of a ``schedule`` attribute; ValueError for a wrong type."""
    if not isinstance(attr, DictionaryAttr):
        raise ValueError(f"expects a dictionary of parameters, got {attr}")
    values: dict[str, int | tuple[int, ...]] = {}
    for name, value in attr.data.items():
        pair = _is_pair(name, space)
        if isinstance(value, IntegerAttr) and isinstance(value.type, IntegerType) and not pair:
            values[name] = value.value.data
        elif isinstance(value, DenseArrayBase) and isinstance(value.elt_type, IntegerType) and pair:
            values[name] = tuple(int(v) for v in value.get_values())
        else:
            wanted = "a pair array<i64: a, b>" if pair else "an integer"
            raise ValueError(f"parameter '{name}' expects {wanted}, got {value}")
    return values


def _is_pair(name: str, space: Space = MATMUL_SIMT_SPACE) -> bool:
    """Whether parameter `name` of `space` takes a pair; ValueError for a name the space
    does not have (a derived quantity such as ``block_m`` says what to pin instead)."""
    param = space.param(name)
    if param is None:
        if space is MATMUL_SIMT_SPACE and name in MatmulSimtParams().describe():
            free = ", ".join(p.name for p in space.params)
            raise ValueError(f"'{name}' is derived from the parameters, not one of them (pin {free})")
        space.check_values({name: None})  # unknown: raises, with did-you-mean
    assert param is not None
    return isinstance(param.choices[0], tuple)


_WORD = re.compile(r"([A-Za-z_]\w*)=(\d+(?:x\d+)*)$")


def values_from_text(text: str, space: Space = MATMUL_SIMT_SPACE) -> dict[str, int | tuple[int, ...]]:
    """The parameters of `space` in an option's text, ``name=value`` words separated by
    spaces or commas (pairs ``AxB``); ValueError for a word of another form or a wrong type."""
    values: dict[str, int | tuple[int, ...]] = {}
    for word in text.replace(",", " ").split():
        match = _WORD.match(word)
        if match is None:
            raise ValueError(f"'{word}' is not name=value (e.g. block_k=16 or block_warps=2x2)")
        name, value = match.groups()
        parsed = tuple(int(v) for v in value.split("x")) if "x" in value else int(value)
        pair = _is_pair(name, space)
        if pair != isinstance(parsed, tuple):
            wanted = "a pair AxB" if pair else "an integer"
            raise ValueError(f"parameter '{name}' expects {wanted}, got {value}")
        values[name] = parsed
    return values


def check_option(template: str, text: str) -> dict[str, int | tuple[int, ...]]:
    """The parameters of an option's text for `template`, their names and choices checked
    (constraints depend on the problem: they are checked per op)."""
    values = values_from_text(text, SPACES[template])
    SPACES[template].check_values(values)
    return values


def pinned_params(op: Operation, arch: str = DEFAULT_ARCH, *, constraints: bool = True,
                  small_m: bool = True) -> TemplateParams | None:
    """The parameters pinned on `op` by its ``schedule`` attribute for the template that
    builds it on `arch`, None without one; OpError (``'<op>': schedule: ...``) for an
    invalid pin or an op that has none to pin. Without `constraints` only the names, types
    and choices are checked (the constraints depend on the arch: a parse-time check does
    not know it), and None is returned. `small_m`: as `tunable_problem`'s."""
    attr = op.attributes.get(SCHEDULE_ATTR)
    if attr is None:
        return None
    if isinstance(op, graph.FusedOp):
        raise OpError(op, f"'{op.name}': schedule: put the schedule on the group's anchor "
                          "(its matmul or convolution), not on the group")
    try:
        tunable = tunable_problem(op, arch, small_m)
    except ValueError as exc:
        raise OpError(op, f"'{op.name}': {exc}") from exc
    if tunable is None:
        raise OpError(op, f"'{op.name}': schedule: this op has no tunable schedule template "
                          "(schedules pin graph.matmul and 2-D graph.conv on implicit GEMM)")
    template, problem = tunable
    try:
        element = str(op.operands[0].type.get_element_type())  # type: ignore[attr-defined]
        values = values_from_attr(attr, SPACES[template])
        if not constraints:
            space_of(template, element, arch).check_values(values)
            return None
        return resolve(template, problem, values, element, arch)
    except ValueError as exc:
        elsewhere = tunable_problem(op)
        if elsewhere is not None and elsewhere[0] != template:  # a tensor-core op, on an older arch
            exc = ValueError(f"{exc}; on {arch} (no tensor cores) this op takes {template}, not {elsewhere[0]}")
        raise OpError(op, f"'{op.name}': schedule: {exc}") from exc


def verify_schedules(root: Operation, arch: str = DEFAULT_ARCH, *, constraints: bool = True,
                     small_m: bool = True) -> None:
    """Check every ``schedule`` attribute under `root` (`pinned_params` on `arch`; without
    `constraints`, names, types and choices only): OpError for the first invalid one."""
    for op in root.walk():
        if SCHEDULE_ATTR in op.attributes:
            pinned_params(op, arch, constraints=constraints, small_m=small_m)


def schedule_attr_text(params: TemplateParams) -> str:
    """The attribute that pins `params`, to paste into an op's attribute dictionary."""
    fields = []
    space = MATMUL_SIMT_SPACE if isinstance(params, MatmulSimtParams) else \
        MATMUL_GEMV_SPACE if isinstance(params, MatmulGemvParams) else MATMUL_TC_SPACE
    for p in space.params:
        value = getattr(params, p.name)
        fields.append(f"{p.name} = array<i64: {value[0]}, {value[1]}>" if isinstance(value, tuple)
                      else f"{p.name} = {value}")
    return f"{SCHEDULE_ATTR} = {{{', '.join(fields)}}}"


def option_text(params: MatmulSimtParams | MatmulGemvParams) -> str:
    """`params` as the value of a ``convert-graph-to-tm`` option (``matmul="..."``,
    ``gemv="..."``)."""
    space = MATMUL_GEMV_SPACE if isinstance(params, MatmulGemvParams) else MATMUL_SIMT_SPACE
    return " ".join(f"{p.name}={value_text(getattr(params, p.name))}" for p in space.params)
