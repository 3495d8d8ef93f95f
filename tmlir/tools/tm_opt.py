"""``tm-opt``: xDSL's opt driver with tmlir's dialects, passes, targets and ONNX frontend.

    tm-opt model.onnx -p lower-to-cuda -t cuda > model.cu
    tm-opt kernels.mlir -p tm-lower-mappings,convert-tm-to-gpu

Errors a user can cause (bad IR, bad ONNX, unsupported op, bad pass option) are reported
as ``tm-opt: error: ...`` and exit status 1, never as a Python traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import stat
import sys
import tempfile
import warnings
from collections.abc import Sequence
from typing import IO, NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
)
from xdsl.xdsl_opt_main import xDSLOptMain

from tmlir.backends.cache import CacheError
from tmlir.context import TmContext
from tmlir.ir.arith_ext import load_extra_arith_ops
from tmlir.ir.pipeline import expand_pipeline
from tmlir.ir.ssa import LocatingParser, verify_module
from tmlir.registry import project_dialects, project_passes, project_targets
from tmlir.tools.cli import one_line_failures


class TmOptMain(xDSLOptMain):
    """The opt driver: xDSL's dialects and passes plus the project's."""

    version_format = "tm-opt (tmlir) built on xdsl {xdsl_version}"

    def register_all_dialects(self) -> None:
        self.ctx = TmContext()  # carries the weight table of an imported .onnx model
        super().register_all_dialects()
        for name, loader in project_dialects().items():
            self.ctx.register_dialect(name, loader)
        load_extra_arith_ops(self.ctx)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, loader in project_passes().items():
            self.register_pass(name, loader)

    def setup_pipeline(self) -> None:
        """xDSL's pipeline with each pipeline pass (``lower-to-cuda``) replaced by its inner
        passes, so ``--print-between-passes`` and ``--time-passes`` see every one."""
        super().setup_pipeline()
        callback = self.pipeline.callback

        def to_stderr(*args) -> None:  # --time-passes, --print-between-passes: not into the output
            with contextlib.redirect_stdout(sys.stderr):
                callback(*args)

        self.pipeline = PassPipeline(expand_pipeline(self.pipeline.passes), to_stderr)

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """The input file, or standard input for ``-`` (as no file), read as MLIR text
        unless ``--frontend`` says otherwise."""
        if self.args.input_file == "-":
            return sys.stdin.buffer, "mlir"
        return super().get_input_stream()

    def get_input_name(self) -> str:
        return "<stdin>" if self.args.input_file in (None, "-") else self.args.input_file

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets.update(project_targets())

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_onnx(io: IO[bytes]) -> ModuleOp:
            from tmlir.frontends.onnx import import_onnx

            imported = import_onnx(io.read(), source=self.get_input_name())
            self.ctx.weights = imported.weights  # for passes that fold weights
            return imported.module

        self.available_frontends["onnx"] = parse_onnx

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatingParser(self.ctx, io.read(), self.get_input_name())
            module = parser.parse_module(not self.args.no_implicit_module)
            self._spans = parser.spans
            return module

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        """Parse, then verify SSA dominance and every op before any pass runs; errors name
        ``file:line:col`` of the op in the text."""
        self._spans = None
        module = super().parse_chunk(chunk, file_extension, start_offset)
        if module is not None and not self.args.disable_verify:
            verify_module(module, self._spans, start_offset)
        return module


class _Buffer(io.StringIO):
    """Output kept in memory until the run succeeds (xDSL closes its output stream)."""

    def close(self) -> None:
        pass


class _UsageError(Exception):
    pass


def _usage_error(self: argparse.ArgumentParser, message: str) -> NoReturn:
    raise _UsageError(message)


def _new_file_mode() -> int:
    """The mode `open` gives a new file: 0o666 less the umask (mkstemp's is 0o600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _write_atomically(path: str, text: str) -> None:
    """Write `text` to `path` whole or not at all: through a temporary file, with the mode
    the file has (or a new file gets), renamed over it (over the file a symlink points
    to). A device or pipe (``-o /dev/null``) is written to directly: renaming over it
    would replace the device by a regular file."""
    path = os.path.realpath(path)
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        with open(path, "w") as f:
            f.write(text)
        return
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tm-opt-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode) if os.path.exists(path) else _new_file_mode())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _error(message: str) -> int:
    print(f"tm-opt: error: {message}", file=sys.stderr)
    return 1


def _warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: IO[str] | None = None, line: str | None = None) -> None:
    print(f"tm-opt: warning: {message}", file=sys.stderr)


@one_line_failures("tm-opt")
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tm-opt`` console script; warnings are one line each."""
    with warnings.catch_warnings():
        warnings.showwarning = _warning
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    error = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = _usage_error  # type: ignore[method-assign]
    try:
        driver = TmOptMain(description="tmlir modular optimizer driver", args=argv)
    except _UsageError as exc:
        return _error(str(exc))
    except ArgSpecParseError as exc:  # a BaseException in xDSL: a malformed pipeline text
        return _error(f"bad pass pipeline '{driver_passes(argv)}': {_spec_error(exc)}")
    except Exception as exc:  # xDSL reports unknown passes and bad pass options this way
        return _error(f"bad pass pipeline '{driver_passes(argv)}': {exc}")
    finally:
        argparse.ArgumentParser.error = error  # type: ignore[method-assign]
    output_file = driver.args.output_file
    buffer = _Buffer()
    driver.prepare_output = lambda: buffer  # type: ignore[method-assign]
    # Diagnostics that --verify-diagnostics/--parsing-diagnostics print (xDSL prints them
    # to stdout) go into the output in chunk order, between the modules they stand for.
    in_order = driver.args.verify_diagnostics or driver.args.parsing_diagnostics
    try:
        with contextlib.redirect_stdout(buffer) if in_order else contextlib.nullcontext():
            driver.run()
    except FileNotFoundError as exc:
        return _error(f"cannot open '{exc.filename}'")
    except IsADirectoryError as exc:
        return _error(f"cannot read '{exc.filename}': it is a directory")
    except CacheError as exc:  # a target that compiles (emu, PTX) needs the cache
        return _error(str(exc))
    except (ParseError, DiagnosticException) as exc:  # verify errors, failed passes
        return _error(str(exc).strip())
    except ValueError as exc:  # includes the ONNX frontend's FrontendError
        return _error(str(exc))
    if output_file is None:
        sys.stdout.write(buffer.getvalue())
    else:
        try:
            _write_atomically(output_file, buffer.getvalue())
        except OSError as exc:  # a missing folder, no permission, a full disk
            return _error(f"cannot write '{output_file}': {exc.strerror or exc}")
    return 0


def _spec_error(exc: ArgSpecParseError) -> str:
    """xDSL's multi-line pipeline parse error as one line: its reason and column."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    where = next((line.rsplit(":", 1)[-1] for line in lines if line.startswith("pass-pipeline:")), "")
    return f"{lines[-1] if lines else 'malformed'}" + (f" (column {where})" if where else "")


def driver_passes(argv: Sequence[str] | None) -> str:
    args = list(sys.argv[1:] if argv is None else argv)
    for flag in ("-p", "--passes"):
        if flag in args and args.index(flag) + 1 < len(args):
            return args[args.index(flag) + 1]
    return ""


if __name__ == "__main__":
    sys.exit(main())
