"""``tm-opt``: xDSL's opt driver with tmlir's dialects, passes, targets and ONNX frontend.

    tm-opt model.onnx -p lower-to-cuda -t cuda > model.cu
    tm-opt kernels.mlir -p tm-lower-mappings,convert-tm-to-gpu

Errors a user can cause (bad IR, bad ONNX, unsupported op, bad pass option) are reported
as ``tm-opt: error: ...`` and exit status 1, never as a Python traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import (
    DiagnosticException,
    ParseError,
    PassFailedException,
    VerifyException,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from tmlir.registry import project_dialects, project_passes, project_targets


class TmOptMain(xDSLOptMain):
    """The opt driver: xDSL's dialects and passes plus the project's."""

    version_format = "tm-opt (tmlir) built on xdsl {xdsl_version}"

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        for name, loader in project_dialects().items():
            self.ctx.register_dialect(name, loader)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, loader in project_passes().items():
            self.register_pass(name, loader)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets.update(project_targets())

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_onnx(io: IO[bytes]) -> ModuleOp:
            from tmlir.frontends.onnx import import_onnx

            return import_onnx(io.read(), source=self.get_input_name()).module

        self.available_frontends["onnx"] = parse_onnx


def _error(message: str) -> int:
    print(f"tm-opt: error: {message}", file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tm-opt`` console script."""
    try:
        driver = TmOptMain(description="tmlir modular optimizer driver", args=argv)
    except (ValueError, TypeError, KeyError, Exception) as exc:  # bad -p / -t options
        if isinstance(exc, SystemExit):
            raise
        return _error(f"bad option: {exc}")
    try:
        driver.run()
    except FileNotFoundError as exc:
        return _error(f"cannot open '{exc.filename}'")
    except ParseError as exc:
        return _error(str(exc).strip())
    except (VerifyException, DiagnosticException) as exc:
        return _error(str(exc).strip())
    except PassFailedException as exc:
        return _error(str(exc).strip())
    except ValueError as exc:  # includes the ONNX frontend's FrontendError
        return _error(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
