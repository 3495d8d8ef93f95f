"""Structural keys of fusion groups: groups with equal keys are scheduled into one kernel.

A kernel depends on its group's structure only: the ops (names, attributes, types), how
they read each other and the values from outside the group, and which values the group
yields. It never depends on which buffers it is launched with, nor on a weight's data.
ResNet-50's 53 convolutions need far fewer distinct kernels, BERT's 12 layers share one
set; ``convert-graph-to-tm`` builds, and every later stage lowers, prints and compiles, each
distinct kernel once, and launches it once per group.

`group_key` gives a group's key with its *canonical values*: the values from outside the
group in the order the members first read them, then every member's results. Two groups
with equal keys have corresponding canonical values, so a kernel's arguments, recorded as
positions in the first group's list, name the buffers of the second.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from xdsl.ir import Attribute, Operation, SSAValue


def attribute_key(attr: Attribute) -> Hashable:
    """`attr` itself when it hashes (xDSL attributes are frozen), else its text."""
    try:
        hash(attr)
    except TypeError:
        return str(attr)
    return attr


def group_key(members: Sequence[Operation], yielded: Sequence[SSAValue],
              ) -> tuple[Hashable, list[SSAValue]]:
    """The structural key of the group of `members` (in order) yielding `yielded`, and its
    canonical values (outside values by first read, then the members' results)."""
    outside: dict[SSAValue, int] = {}
    inside: dict[SSAValue, tuple[int, int]] = {}
    ops = []
    for m, op in enumerate(members):
        refs = []
        for operand in op.operands:
            if operand in inside:
                refs.append(inside[operand])
            else:
                refs.append(outside.setdefault(operand, len(outside)))
        fields = {**op.properties, **op.attributes}
        ops.append((op.name, tuple(refs), tuple(r.type for r in op.results),
                    tuple(sorted((k, attribute_key(v)) for k, v in fields.items()))))
        for r, result in enumerate(op.results):
            inside[result] = (m, r)
    key = (tuple(ops), tuple(v.type for v in outside),
           tuple(inside.get(v, ("outside", outside.get(v))) for v in yielded))
    return key, [*outside, *(r for op in members for r in op.results)]
