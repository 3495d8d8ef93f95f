"""What the ONNX frontend's modules share: its error type and SSA name hints."""

from __future__ import annotations

import re


class FrontendError(ValueError):
    """A model the frontend cannot import; the message is one line naming the culprit."""


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
