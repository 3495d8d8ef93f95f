"""The ONNX operators the frontend imports: one `OnnxOp` record per op type.

A family module (``onnx_elementwise.py``, ``onnx_conv.py``, ...) declares each op it
imports with the `onnx_op` decorator on the op's converter, a function of the importer's
`ImportContext` (``onnx_context.py``) and the node::

    @onnx_op("Tile", inputs=(ANY, INTEGERS), constant_inputs=(1,),
             input_names=("input", "repeats"))
    def broadcast(ctx: ImportContext, node: NodeProto) -> None: ...

The record says what the importer checks before the converter runs: the attributes (with
their ONNX types and allowed values), the dtypes of the inputs, which inputs are read as
constants, and how many outputs there may be. `operators` imports the family modules
(`FAMILIES`) on first use, so every op is registered before anyone looks one up.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

import onnx
from onnx import AttributeProto, NodeProto

from tmlir import dtypes, plugins
from tmlir.dtypes import (  # noqa: F401  (the dtypes of records, for the families)
    BOOL,
    DTYPES,
    FLOAT16,
    FLOAT32,
    INT64,
    INTEGERS,
    NUMERIC,
)
from tmlir.frontends.onnx_common import FrontendError

if TYPE_CHECKING:
    from tmlir.frontends.onnx_context import ImportContext

#: ONNX attribute types, as records name them.
INT, INTS, FLOAT = AttributeProto.INT, AttributeProto.INTS, AttributeProto.FLOAT
FLOATS, STRING, TENSOR = AttributeProto.FLOATS, AttributeProto.STRING, AttributeProto.TENSOR
GRAPH = AttributeProto.GRAPH
#: Dtype sets of an input (``inputs=``): any supported dtype; the floats computed in float32
#: (float16 and bfloat16 tensors are read widened to float32 and written rounded:
#: ``tmlir/dtypes.py``).
ANY, F32 = DTYPES, (FLOAT32, FLOAT16, dtypes.BFLOAT16)
#: The floats of ops whose templates compute in the tensor's float type: F32's, and
#: float64 computed in double.
F64 = (*F32, dtypes.FLOAT64)

#: The values of a flag attribute.
FLAG = (0, 1)

#: The modules that declare ops, one per operator family.
FAMILIES = ("onnx_elementwise", "onnx_matmul", "onnx_constants", "onnx_logic",
            "onnx_data_movement", "onnx_reductions", "onnx_conv", "onnx_normalization",
            "onnx_recurrent",
            "onnx_indexing", "onnx_einsum", "onnx_control_flow")

Converter = Callable[["ImportContext", NodeProto], None]


@dataclass(frozen=True)
class Attr:
    """An attribute an op supports: its ONNX type, the values it may take (None: any) and
    its ONNX default (None: no default, or one the converter computes)."""

    type: int
    choices: tuple[object, ...] | None = None
    default: object = None


@dataclass(frozen=True)
class OnnxOp:
    """What the importer knows of one ONNX op type (default domain) besides its converter."""

    op_type: str
    convert: Converter = field(repr=False)
    attributes: Mapping[str, Attr] = field(default_factory=dict)
    """The supported attributes; any other is an error."""
    inputs: tuple[tuple[dtypes.DType, ...], ...] = (F32,)
    """The dtypes each input may have (the last entry repeats). Inputs read as constants
    are checked only when they are computed at run time: their converters then say that
    they must be constants."""
    constant_inputs: tuple[int, ...] = ()
    """Inputs (by position) read as constants when the model is imported."""
    input_names: tuple[str, ...] = ()
    """The ONNX names of the inputs, for error messages about constant inputs."""
    outputs: int | None = 1
    """How many outputs the converter defines (None: any number)."""
    unused_outputs: bool = False
    """Whether outputs after the first are accepted when nothing uses them."""
    optional_outputs: bool = False
    """Whether any output, the first too, may be absent (``""``): the converter defines
    those present (an LSTM's ``Y`` when only ``Y_h`` is wanted)."""
    one_attribute: bool = False
    """Whether exactly one of the attributes must be given (Constant)."""

    def read_attributes(self, node: NodeProto, label: str) -> dict[str, object]:
        """The node's attribute values; a FrontendError for any the op does not support, of
        the wrong type, or with a value outside its choices."""
        found: dict[str, object] = {}
        for attr in node.attribute:
            spec = self.attributes.get(attr.name)
            if spec is None:
                raise FrontendError(f"{label}: unsupported attribute '{attr.name}'")
            if attr.type != spec.type:
                expected = AttributeProto.AttributeType.Name(spec.type)
                raise FrontendError(f"{label}: attribute '{attr.name}' must be {expected}")
            value = onnx.helper.get_attribute_value(attr)
            found[attr.name] = value.decode(errors="replace") if isinstance(value, bytes) else value
            if spec.choices is not None and found[attr.name] not in spec.choices:
                expected = " or ".join(map(repr, spec.choices))
                raise FrontendError(f"{label}: unsupported value {found[attr.name]!r} of "
                                    f"attribute '{attr.name}' (expected {expected})")
        if self.one_attribute and len(found) != 1:
            raise FrontendError(f"{label}: expected exactly one of the attributes "
                                f"{', '.join(map(repr, self.attributes))}")
        return found


#: The window attributes every pool takes (MaxPool, AveragePool, LpPool); `pool_window`
#: (``onnx_common.py``) reads them.
POOL_ATTRIBUTES = {"auto_pad": Attr(STRING, ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")),
                   "ceil_mode": Attr(INT, FLAG), "dilations": INTS, "kernel_shape": INTS,
                   "pads": INTS, "strides": INTS}

_OPS: dict[str, OnnxOp] = {}


def onnx_op(op_type: str, *, attributes: Mapping[str, int | Attr] | None = None,
            inputs: tuple[tuple[dtypes.DType, ...], ...] = (F32,),
            constant_inputs: tuple[int, ...] = (), input_names: tuple[str, ...] = (),
            outputs: int | None = 1, unused_outputs: bool = False,
            optional_outputs: bool = False,
            one_attribute: bool = False) -> Callable[[Converter], Converter]:
    """Declare `op_type`, converted by the decorated function (returned unchanged, so that
    one converter can take several op types). An attribute given as its ONNX type alone
    takes any value."""

    def register(convert: Converter) -> Converter:
        assert op_type not in _OPS, f"ONNX op {op_type} declared twice"
        _OPS[op_type] = _record(op_type, convert, attributes, inputs, constant_inputs,
                                input_names, outputs, unused_outputs, optional_outputs,
                                one_attribute)
        return convert

    return register


_PLUGIN_OPS: dict[tuple[str, str], OnnxOp] = {}


def record_of(node: NodeProto) -> OnnxOp | None:
    """The record of the node's op: a declared one (default domain) or one a plugin added
    (any domain, ``tmlir/plugins.py``); None if there is none."""
    domain = "" if node.domain == "ai.onnx" else node.domain
    added = plugins.contributions().onnx_converters.get((domain, node.op_type))
    if domain == "" and node.op_type in operators():
        if added is not None:
            raise plugins.PluginError(f"plugin '{added.plugin}': ONNX op '{node.op_type}' clashes "
                                      "with a built-in converter")
        return operators()[node.op_type]
    if added is None:
        return None
    if (domain, node.op_type) not in _PLUGIN_OPS:
        try:
            record = _record(node.op_type, added.convert, **added.record)
        except TypeError as exc:  # a field that onnx_op does not take
            raise plugins.PluginError(f"plugin '{added.plugin}': ONNX op '{node.op_type}': "
                                      f"{exc}") from exc
        _PLUGIN_OPS[(domain, node.op_type)] = record
    return _PLUGIN_OPS[(domain, node.op_type)]


def _record(op_type: str, convert: Converter, attributes: Mapping[str, int | Attr] | None = None,
            inputs: tuple[tuple[dtypes.DType, ...], ...] = (F32,),
            constant_inputs: tuple[int, ...] = (), input_names: tuple[str, ...] = (),
            outputs: int | None = 1, unused_outputs: bool = False,
            optional_outputs: bool = False, one_attribute: bool = False) -> OnnxOp:
    specs = {name: spec if isinstance(spec, Attr) else Attr(spec)
             for name, spec in (attributes or {}).items()}
    return OnnxOp(op_type, convert, MappingProxyType(specs), inputs, constant_inputs,
                  input_names, outputs, unused_outputs, optional_outputs, one_attribute)


@functools.cache
def operators() -> Mapping[str, OnnxOp]:
    """Every declared op, by op type (the family modules are imported on first use)."""
    for family in FAMILIES:
        importlib.import_module(f"tmlir.frontends.{family}")
    return MappingProxyType(_OPS)
