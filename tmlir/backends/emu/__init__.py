"""The emu backend: run emitted CUDA C on the CPU with real CUDA semantics."""

from tmlir.backends.emu.emu import EmuError, EmuModule, compile_emu

__all__ = ["EmuError", "EmuModule", "compile_emu"]
