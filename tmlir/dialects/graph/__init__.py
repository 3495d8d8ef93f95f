"""The ``graph`` dialect: tensor operators with value semantics, as the frontend imports them.

A model is a ``func.func`` whose arguments are the model inputs and whose results are its
outputs (names in the ``tm.inputs`` / ``tm.outputs`` function attributes). Weights are not
printed inline: ``graph.weight "fc1.weight"`` names an entry of a side table (the ONNX file
they came from, or the dictionary the Python API keeps), so a 100 MB model stays a small
text.

    func.func @main(%x: tensor<8x784xf32>) -> tensor<8x10xf32> {
      %w = graph.weight "fc.weight" : tensor<10x784xf32>
      %b = graph.weight "fc.bias" : tensor<10xf32>
      %y = graph.matmul %x, %w, %b {transpose_rhs} : (...) -> tensor<8x10xf32>
      %z = graph.leaky_relu %y {alpha = 1.000000e-01 : f32} : tensor<8x10xf32>
      func.return %z : tensor<8x10xf32>
    }

Elementwise ops are one op per function, as ONNX has them: unary ops keep their operand's
type and carry their parameters as f32 properties (``graph.clip %x {min = 0.0 : f32}``),
binary ops (``graph.add``, ``graph.pow``) and variadic ones (``graph.max %a, %b, %c``)
broadcast numpy-style.


One module per op family: ``weight``, ``constant`` (data written inline), ``elementwise``,
``matmul``, ``reductions`` (reduce, softmax, normalization, pools), ``normalization`` (Lp
pool, LRN), ``pool_indices`` (max pool with argmax), ``conv``, ``data_movement``, ``resize``, ``indexing`` (run-time
indices), ``logic`` (comparisons, logical ops, ``where``, ``cast``), ``recurrent`` (the
time loop of LSTM, GRU and RNN layers), ``attention`` (scaled dot-product attention) and
``fused`` (fusion groups); shape
helpers in ``shapes``. Each module's ``__all__`` is what it adds to the dialect: its ops are
registered and its names are importable from ``tmlir.dialects.graph``. What passes and
schedules need to know about an op (``Injective``, ``AnyElementType``, ``NoOpWhen``) is
declared on it as a trait, from ``traits``.
"""

from __future__ import annotations

from types import ModuleType

from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation

from tmlir.dialects.graph import (
    attention,
    constant,
    conv,
    data_movement,
    elementwise,
    fused,
    indexing,
    logic,
    matmul,
    normalization,
    pool_indices,
    recurrent,
    reductions,
    resize,
    weight,
)
from tmlir.dialects.graph.attention import *  # noqa: F403
from tmlir.dialects.graph.constant import *  # noqa: F403
from tmlir.dialects.graph.conv import *  # noqa: F403
from tmlir.dialects.graph.data_movement import *  # noqa: F403
from tmlir.dialects.graph.elementwise import *  # noqa: F403
from tmlir.dialects.graph.fused import *  # noqa: F403
from tmlir.dialects.graph.indexing import *  # noqa: F403
from tmlir.dialects.graph.logic import *  # noqa: F403
from tmlir.dialects.graph.matmul import *  # noqa: F403
from tmlir.dialects.graph.normalization import *  # noqa: F403
from tmlir.dialects.graph.pool_indices import *  # noqa: F403
from tmlir.dialects.graph.recurrent import *  # noqa: F403
from tmlir.dialects.graph.reductions import *  # noqa: F403
from tmlir.dialects.graph.resize import *  # noqa: F403
from tmlir.dialects.graph.shapes import *  # noqa: F403
from tmlir.dialects.graph.traits import *  # noqa: F403
from tmlir.dialects.graph.weight import *  # noqa: F403

FAMILIES: tuple[ModuleType, ...] = (weight, constant, elementwise, matmul, reductions, normalization,
                                    pool_indices, conv, data_movement, resize, indexing, logic,
                                    recurrent, attention, fused)


def family_ops(module: ModuleType) -> list[type[IRDLOperation]]:
    """The ops a family module defines (the concrete ``graph.*`` ops of its ``__all__``)."""
    values = [getattr(module, name) for name in module.__all__]
    return [v for v in values if isinstance(v, type) and issubclass(v, IRDLOperation)
            and isinstance(getattr(v, "name", None), str) and v.name.startswith("graph.")]


Graph = Dialect("graph", [op for module in FAMILIES for op in family_ops(module)], [])
