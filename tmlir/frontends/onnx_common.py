"""What the ONNX frontend's modules share: its error type, one-line messages, the tensor
types of ONNX values, SSA name hints, ONNX's ``auto_pad`` and the pools' windows."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, TensorShapeProto, numpy_helper
from xdsl.dialects.builtin import TensorType

from tmlir import dtypes


class FrontendError(ValueError):
    """A model the frontend cannot import; the message is one line naming the culprit."""


class RunTimeValueError(FrontendError):
    """A value the importer must know (a ``Reshape``'s shape, a reduction's axes, an
    ``If``'s condition) is computed from model inputs (small ones, as a rule): the model
    compiles once their values are given (``InferenceSession`` compiles per value fed;
    ``import_onnx(input_values=...)``). `inputs` names those model inputs."""

    def __init__(self, message: str, inputs: tuple[str, ...], where: str) -> None:
        super().__init__(message)
        self.inputs = inputs
        self.where = where
        """The node that needs the value: ``node 'r' (Reshape)``."""


def sanitize_name(name: str) -> str | None:
    """An SSA name hint (C identifier characters) for an ONNX value name; None if empty.

    ``onnx::MatMul_12`` -> ``onnx__MatMul_12``, ``/layer1/Relu_output_0`` ->
    ``layer1_Relu_output_0``, ``fc.weight`` -> ``fc_weight``, ``0`` -> ``v0``. xDSL then
    drops a trailing ``_<digits>`` from a hint and renumbers clashes when it prints.
    """
    hint = re.sub(r"\W", "_", re.sub(r"^\W+|\W+$", "", name, flags=re.ASCII), flags=re.ASCII)
    if not hint:
        return None
    return f"v{hint}" if hint[0].isdigit() else hint


def fresh_name(taken: set[str], base: str) -> str:
    """`base`, or ``base_1``, ``base_2``, ...: the first name not in `taken`, which it joins."""
    name, number = base, 0
    while name in taken:
        number += 1
        name = f"{base}_{number}"
    taken.add(name)
    return name


def tensor_array(tensor: TensorProto, where: str, base_dir: str | None = None) -> np.ndarray:
    """A TensorProto's data as an array; one FrontendError line naming `where` and the
    tensor when its data does not fit its type and dims (wrong byte count, say)."""
    try:
        return numpy_helper.to_array(tensor, base_dir) if base_dir else numpy_helper.to_array(tensor)
    except Exception as exc:
        dims = "x".join(map(str, tensor.dims)) or "scalar"
        type_name = TensorProto.DataType.Name(tensor.data_type) if tensor.data_type in \
            TensorProto.DataType.values() else f"type {tensor.data_type}"
        raise FrontendError(f"{where}: tensor '{tensor.name}' ({type_name.lower()}, {dims}) has "
                            f"data that does not fit it: {one_line(exc)}") from None


def one_line(exc: BaseException) -> str:
    """The message of `exc` on one line (its type name if it has none)."""
    return " ".join(str(exc).split()) or type(exc).__name__


def node_label(node: onnx.NodeProto, index: int) -> str:
    """How errors name a node: ``node 'name' (Op)``, or ``node #index (Op)`` without a name
    (a domain other than the default one prefixes the op)."""
    op = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
    return f"node '{node.name}' ({op})" if node.name else f"node #{index} ({op})"


def static_type(
    elem_type: int, dims: Sequence[int | TensorShapeProto.Dimension] | None, what: str
) -> TensorType:
    """The tensor type of a value, or a FrontendError saying why there is none."""
    dtype = dtypes.from_onnx(elem_type)
    if dtype is None:
        raise FrontendError(f"{what}: unsupported dtype {dtypes.onnx_name(elem_type)} "
                            f"(supported: {dtypes.SUPPORTED_NAMES})")
    if dims is None:
        raise FrontendError(f"{what}: shape is unknown; only static shapes are supported")
    shape = []
    for i, dim in enumerate(dims):
        if isinstance(dim, int) or dim.HasField("dim_value"):
            shape.append(dim if isinstance(dim, int) else dim.dim_value)
        else:
            param = f"'{dim.dim_param}'" if dim.HasField("dim_param") else "(unnamed)"
            raise FrontendError(f"{what}: dynamic dimension {param} is not supported (dim {i})")
    return TensorType(dtype.ir, shape)


def value_type(infos: dict[str, onnx.ValueInfoProto], name: str, what: str) -> TensorType:
    """The tensor type of value `name` as shape inference recorded it in `infos`, or a
    FrontendError naming `what` (not a tensor, unknown, unsupported dtype, dynamic)."""
    info = infos.get(name)
    kind = info.type.WhichOneof("value") if info is not None else None
    if kind not in (None, "tensor_type"):
        raise FrontendError(f"{what}: {type_kind(kind)}, not a tensor (only tensors are supported)")
    if info is None or kind is None:
        raise FrontendError(f"{what}: type is unknown (shape inference could not determine it)")
    tensor = info.type.tensor_type
    return static_type(tensor.elem_type,
                       tensor.shape.dim if tensor.HasField("shape") else None, what)


def type_kind(kind: str) -> str:
    """``sequence_type`` -> ``a sequence``, ``optional_type`` -> ``an optional``."""
    word = kind.removesuffix("_type").replace("_", " ")
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def auto_pads(auto_pad: str, input_spatial: Sequence[int], kernel: Sequence[int],
              strides: Sequence[int], dilations: Sequence[int],
              pads: Sequence[int] = ()) -> tuple[int, ...]:
    """ONNX's ``auto_pad`` (of Conv and the pools) as explicit pads, the begins then the
    ends, for any number of spatial dims.

    ``NOTSET`` keeps `pads` (zeros when empty); ``VALID`` is no padding;
    ``SAME_UPPER`` / ``SAME_LOWER`` pad so that ``out = ceil(in / stride)``, splitting the
    total evenly and putting an odd one at the end (UPPER) or the beginning (LOWER)::

        auto_pads("SAME_UPPER", (5, 6), (3, 2), (2, 2), (1, 1)) == (1, 0, 1, 0)
    """
    k = len(input_spatial)
    if auto_pad in ("NOTSET", ""):
        return tuple(pads) or (0,) * (2 * k)
    if auto_pad == "VALID":
        return (0,) * (2 * k)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise FrontendError(f"auto_pad '{auto_pad}', expected NOTSET, SAME_UPPER, SAME_LOWER "
                            "or VALID")
    begins, ends = [], []
    for size, kk, s, d in zip(input_spatial, kernel, strides, dilations):
        total = max(0, (math.ceil(size / s) - 1) * s + (kk - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return (*begins, *ends)


def pool_window(label: str, attrs: dict[str, object], shape: Sequence[int]
                ) -> tuple[list[int], list[int], tuple[int, ...], list[int], bool]:
    """A pool's window from its attributes (``POOL_ATTRIBUTES``) for an input of `shape`
    ``(N, C, D1, ...)``: kernel, strides, explicit pads (begins, then ends), dilations and
    ``ceil_mode``; a FrontendError naming `label` for a missing kernel or a wrong length."""
    k = len(shape) - 2
    if "kernel_shape" not in attrs:
        raise FrontendError(f"{label}: attribute 'kernel_shape' is required")

    def per_dim(name: str, size: int, default: int) -> list[int]:
        values = list(attrs.get(name) or [default] * size)  # type: ignore[call-overload]
        if len(values) != size:
            spatial = size // 2 if name == "pads" else size
            raise FrontendError(f"{label}: attribute '{name}' has {len(values)} values, "
                                f"expected {size} (the input has {spatial} spatial dims)")
        return values

    kernel, strides = per_dim("kernel_shape", k, 1), per_dim("strides", k, 1)
    dilations, auto_pad = per_dim("dilations", k, 1), str(attrs.get("auto_pad", "NOTSET"))
    pads = auto_pads(auto_pad, shape[2:], kernel, strides, dilations, per_dim("pads", 2 * k, 0))
    return kernel, strides, pads, dilations, attrs.get("ceil_mode", 0) == 1 and auto_pad == "NOTSET"
