"""tmlir: a deep learning compiler on xDSL with Hidet's task-mapping programming paradigm."""

__version__ = "0.1.0"


def __getattr__(name: str):  # lazy: importing tmlir must not import xDSL or onnx
    if name in ("InferenceSession", "SessionError"):
        from tmlir.runtime import session

        return getattr(session, name)
    if name == "DeviceArray":
        from tmlir.runtime.runners import DeviceArray

        return DeviceArray
    raise AttributeError(f"module 'tmlir' has no attribute {name!r}")


__all__ = ["DeviceArray", "InferenceSession", "SessionError", "__version__"]
