"""An example tmlir plugin: ``example.swish`` (``x * sigmoid(x)``) from ONNX to CUDA.

tmlir calls `register` once per process when this package is installed (the entry point
in ``pyproject.toml``) or named by ``tm-opt --load-plugin tmlir_example_plugin``. It adds
the ``example`` dialect, the ``example-fuse-swish`` pass, the schedule template of
``example.swish`` and the converter of the ONNX op ``com.example.Swish``.
"""

from __future__ import annotations

from tmlir.plugins import PluginAPI


def register(api: PluginAPI) -> None:
    """Add this plugin's dialect, pass, template and ONNX converter to tmlir."""
    from tmlir_example_plugin.dialect import Example, SwishOp
    from tmlir_example_plugin.fuse_swish import ExampleFuseSwish
    from tmlir_example_plugin.onnx_swish import convert_swish
    from tmlir_example_plugin.template import swish_kernel

    api.add_dialect("example", lambda: Example)
    api.add_pass(ExampleFuseSwish)
    api.add_template(SwishOp, swish_kernel)
    api.add_onnx_converter("Swish", convert_swish, domain="com.example")
