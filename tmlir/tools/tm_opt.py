"""``tm-opt``: xDSL's opt driver with tmlir's dialects, passes, targets and ONNX frontend.

    tm-opt model.onnx -p lower-to-cuda -t cuda > model.cu
    tm-opt kernels.mlir -p tm-lower-mappings,convert-tm-to-gpu

Errors a user can cause (bad IR, bad ONNX, unsupported op, bad pass option) are reported
as ``tm-opt: error: ...`` and exit status 1, never as a Python traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
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
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
)
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from tmlir.backends.cache import CacheError
from tmlir.context import TmContext
from tmlir.ir.arith_ext import load_extra_arith_ops
from tmlir.ir.diagnostics import OpWarning
from tmlir.ir.pass_options import PassOptionError, parse_passes
from tmlir.ir.pipeline import expand_pipeline
from tmlir.ir.ssa import LocatingParser, describe, offset_spans, verify_module
from tmlir.registry import project_dialects, project_passes, project_targets
from tmlir.tools.cli import one_line_failures
from tmlir.tools.opt_diagnostics import render, run_verifying
from tmlir.tools.opt_help import add_help_arguments


class TmOptMain(xDSLOptMain):
    """The opt driver: xDSL's dialects and passes plus the project's."""

    version_format = "tm-opt (tmlir) built on xdsl {xdsl_version}"
    #: Where each op of the chunk being processed was parsed from (lines of the whole file).
    op_spans: dict | None = None

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
        passes, so ``--print-between-passes`` and ``--time-passes`` see every one; after each
        pass, a verifier error names the op (``file:line:col`` if it came from the text)."""
        passes = parse_passes(self.available_passes, self.args.passes)  # typed, checked options
        spec, self.args.passes = self.args.passes, ""
        super().setup_pipeline()  # for xDSL's callback: verify, --print-between-passes, --time-passes
        self.args.passes = spec
        callback = self.pipeline.callback

        def to_stderr(previous, module, following) -> None:  # timings, IR: not into the output
            verify = not self.args.disable_verify
            if verify and previous is not None:
                verify_module(module, self.op_spans, dominance=False)
            self.args.disable_verify = True  # verified above: xDSL's callback need not again
            try:
                with contextlib.redirect_stdout(sys.stderr):
                    callback(previous, module, following)
            finally:
                self.args.disable_verify = not verify

        self.pipeline = PassPipeline(expand_pipeline(passes), to_stderr)

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
        self.binary_outputs: list[bytes] = []  # a binary target's output, one per module

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument("--arch", metavar="SM", default=None,
                                help="GPU architecture of -t ptx, cubin and report (default sm_90)")
        arg_parser.add_argument("--load-plugin", metavar="MODULE", action="append", default=[],
                                help="load a tmlir plugin (a module name or a .py file) before "
                                     "anything else; repeatable (docs/extending.md#plugins)")
        add_help_arguments(self, arg_parser)  # --help, --help-pass, --help-target, --help-all; -t checked

    def chosen_target(self) -> Target | None:
        """The ``-t`` target with its options and ``--arch``; None for those xDSL builds
        itself (``mlir`` and function targets). One-line errors for bad options."""
        from tmlir.backends.ptx_targets import TargetOptionError, build_target

        spec = parse_spec(self.args.target)
        factory = self.available_targets[spec.name]
        if spec.name == "mlir" or inspect.signature(factory).parameters:
            if self.args.arch is not None:
                raise TargetOptionError(f"--arch applies to -t ptx, cubin and report, not -t {spec.name}")
            return None
        return build_target(factory, spec, self.args.arch)

    def output_resulting_program(self, prog: ModuleOp) -> str:
        """`prog` as the ``-t`` target writes it; a binary target's bytes (``-t cubin``)
        go to ``self.binary_outputs`` instead."""
        target = self.chosen_target()
        if target is None:
            return super().output_resulting_program(prog)
        if getattr(target, "binary", False):
            self.binary_outputs.append(target.emit_binary(self.ctx, prog))
            return ""
        output = io.StringIO()
        target.emit(self.ctx, prog, output)
        return output.getvalue()

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_onnx(io: IO[bytes]) -> ModuleOp:
            from tmlir.frontends.onnx import import_onnx

            imported = import_onnx(io.read(), source=self.get_input_name())
            self.ctx.weights = imported.weights  # for passes that fold weights
            return imported.module

        self.available_frontends["onnx"] = parse_onnx

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            self.ctx.weights = None  # each chunk (--split-input-file) starts without weights
            parser = LocatingParser(self.ctx, io.read(), self.get_input_name())
            module = parser.parse_module(not self.args.no_implicit_module)
            self.op_spans = parser.spans
            return module

        self.available_frontends["mlir"] = parse_mlir

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
        """Parse, then verify SSA dominance and every op before any pass runs; errors name
        ``file:line:col`` of the op in the text. A pinned ``schedule`` attribute is checked
        against its template's space here too, as a verifier would (the dialects cannot
        know the spaces: they sit below the schedules): its names, types and choices; the
        constraints, which depend on the target arch, when ``convert-graph-to-tm`` runs."""
        self.op_spans = None
        module = super().parse_chunk(chunk, file_extension, start_offset)
        if self.op_spans:
            self.op_spans = offset_spans(self.op_spans, start_offset)
        if module is not None and not self.args.disable_verify:
            verify_module(module, self.op_spans)
            if any("schedule" in op.attributes for op in module.walk()):  # pinned.SCHEDULE_ATTR; loaded lazily
                from tmlir.schedules.pinned import verify_schedules

                verify_schedules(module, constraints=False)
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


def _write_atomically(path: str, text: str | bytes) -> None:
    """Write `text` to `path` whole or not at all: through a temporary file, with the mode
    the file has (or a new file gets), renamed over it (over the file a symlink points
    to). A device or pipe (``-o /dev/null``) is written to directly: renaming over it
    would replace the device by a regular file."""
    path = os.path.realpath(path)
    mode = "wb" if isinstance(text, bytes) else "w"
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        with open(path, mode) as f:
            f.write(text)
        return
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tm-opt-")
    try:
        with os.fdopen(fd, mode) as f:
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
             file: IO[str] | None = None, line: str | None = None, *, driver: TmOptMain | None = None
             ) -> None:
    if isinstance(message, OpWarning) and driver is not None:  # where the op is in the input
        message = describe(message.op, driver.op_spans, message.message)
    print(f"tm-opt: warning: {message}", file=sys.stderr)


@one_line_failures("tm-opt")
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tm-opt`` console script; warnings are one line each."""
    with warnings.catch_warnings():
        warnings.showwarning = _warning
        return _main(argv)


def _load_plugins(argv: Sequence[str] | None) -> None:
    """Load each ``--load-plugin`` of `argv` (before the driver parses ``-p``, whose pass
    names a plugin may define), then check every plugin's names; a PluginError if one fails."""
    from tmlir import plugins

    args = list(sys.argv[1:] if argv is None else argv)
    for index, arg in enumerate(args):
        if arg == "--load-plugin" and index + 1 < len(args):
            plugins.load_plugin(args[index + 1])
        elif arg.startswith("--load-plugin="):
            plugins.load_plugin(arg.split("=", 1)[1])
    project_dialects(), project_passes(), project_targets()  # clashes with built-in names


def _main(argv: Sequence[str] | None) -> int:
    try:
        _load_plugins(argv)
    except ValueError as exc:  # PluginError
        return _error(str(exc))
    error = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = _usage_error  # type: ignore[method-assign]
    try:
        driver = TmOptMain(description="tmlir modular optimizer driver", args=argv)
    except _UsageError as exc:  # -t's own errors name the target: no argparse prefix
        return _error(str(exc).removeprefix("argument -t/--target: "))
    except ArgSpecParseError as exc:  # a BaseException in xDSL: a malformed pipeline text
        return _error(f"bad pass pipeline '{driver_passes(argv)}': {_spec_error(exc)}")
    except PassOptionError as exc:  # an unknown pass or option, a bad option value
        return _error(str(exc))
    except Exception as exc:  # xDSL reports unknown passes and bad pass options this way
        return _error(f"bad pass pipeline '{driver_passes(argv)}': {exc}")
    finally:
        argparse.ArgumentParser.error = error  # type: ignore[method-assign]
    output_file = driver.args.output_file
    try:
        target = driver.chosen_target()  # bad target options and --arch before any input
    except (DiagnosticException, ValueError) as exc:
        return _error(str(exc))
    binary = getattr(target, "binary", False)
    if binary and output_file is None and sys.stdout.isatty():
        return _error(f"-t {target.name} writes binary; give -o FILE")
    buffer = _Buffer()
    driver.prepare_output = lambda: buffer  # type: ignore[method-assign]
    warnings.showwarning = functools.partial(_warning, driver=driver)
    status = 0
    try:
        if driver.args.verify_diagnostics:  # expected-error annotations: opt_diagnostics.py
            status = run_verifying(driver, buffer)
        else:  # what --parsing-diagnostics prints goes into the output, in chunk order
            with contextlib.redirect_stdout(buffer) if driver.args.parsing_diagnostics \
                    else contextlib.nullcontext():
                driver.run()
    except FileNotFoundError as exc:
        return _error(f"cannot open '{exc.filename}'")
    except IsADirectoryError as exc:
        return _error(f"cannot read '{exc.filename}': it is a directory")
    except CacheError as exc:  # a target that compiles (emu, PTX) needs the cache
        return _error(str(exc))
    except (ParseError, DiagnosticException, ValueError) as exc:  # verify errors, failed passes,
        return _error(render(exc, driver.op_spans))  # the ONNX frontend's FrontendError
    output: str | bytes = buffer.getvalue()
    if binary:
        if len(driver.binary_outputs) != 1 or output:  # --split-input-file, --verify-diagnostics
            flag = "--split-input-file" if driver.args.split_input_file else "--verify-diagnostics"
            return _error(f"-t {target.name} writes the binary of one module: drop {flag}")
        output = driver.binary_outputs[0]
    if output_file is None:
        if isinstance(output, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(output)
            sys.stdout.buffer.flush()
        else:
            sys.stdout.write(output)
    else:
        try:
            _write_atomically(output_file, output)
        except OSError as exc:  # a missing folder, no permission, a full disk
            return _error(f"cannot write '{output_file}': {exc.strerror or exc}")
    return status


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
