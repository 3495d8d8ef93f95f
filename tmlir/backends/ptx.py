"""CUDA C source to PTX / CUBIN, and ptxas resource statistics.

PTX is produced in-process by NVRTC (through `cuda.bindings.nvrtc`, normally the
`nvidia-cuda-nvrtc` wheel) or by `nvcc -ptx`; `compiler="auto"` prefers NVRTC and falls
back to nvcc when the NVRTC library cannot be loaded. Register, spill, shared- and
local-memory usage come from `nvcc -cubin -Xptxas -v`. Every artifact is cached on disk
(see `tmlir.backends.cache`) under a key made of the source, the target architecture, the
compiler, its flags and its version, so a second request for the same kernel is a file read.

Generated kernels are `extern "C"`, include no headers, and so need no include paths; each
is compilable alone. `compile_kernels_ptx` compiles a program's kernels one by one, each
cached under its own key, on a pool of worker threads (NVRTC releases the GIL): a model
that changes one kernel recompiles that kernel only.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tmlir.backends.cache import cache_key, cached_file, cached_path

if TYPE_CHECKING:
    from tmlir.backends.cuda_c import CudaProgram

#: The GPU architectures tmlir compiles and schedules for (``target-arch``, ``--arch``).
SUPPORTED_ARCHS = ("sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_100", "sm_120")
#: Arch-specific targets (code for that GPU only): sm_90a has Hopper's wgmma.
ARCH_SPECIFIC = ("sm_90a",)
#: What `compile_ptx`, `compile_cubin`, `ptxas_stats` and the ptx/cubin/report targets accept.
COMPILE_ARCHS = SUPPORTED_ARCHS + ARCH_SPECIFIC
#: Flags given to both compilers (besides the architecture).
COMMON_FLAGS = ("-std=c++17",)

Compiler = Literal["auto", "nvrtc", "nvcc"]


class CudaCompileError(RuntimeError):
    """A CUDA C compilation failed; `summary` is the first line, `log` the compiler output."""

    def __init__(self, summary: str, log: str = "") -> None:
        self.summary = summary
        self.log = log
        super().__init__(f"{summary}\n{log}" if log else summary)


def _compile_error(compiler: str, what: str, arch: str, log: str) -> CudaCompileError:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    first = next((line for line in lines if re.search(r"\berror\b", line, re.I)), None)
    return CudaCompileError(
        f"{compiler} failed to compile {what} for {arch}: {first or (lines[0] if lines else '?')}",
        log,
    )


def check_arch(arch: str) -> str:
    """Return the compute capability digits of `arch` ("sm_90" -> "90", "sm_90a" -> "90a");
    ValueError if unknown."""
    if arch not in COMPILE_ARCHS:
        raise ValueError(f"unsupported CUDA arch {arch!r}; valid: {', '.join(COMPILE_ARCHS)}")
    return arch.removeprefix("sm_")


# ----------------------------------------------------------------------------- versions


@functools.cache
def nvrtc_version() -> tuple[int, int] | None:
    """(major, minor) of the NVRTC library `cuda.bindings` loads, or None if it cannot load."""
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # ImportError, DynamicLibNotFoundError, ...
        return None
    return (major, minor) if err == nvrtc.nvrtcResult.NVRTC_SUCCESS else None


def _nvcc_path() -> str:
    found = shutil.which("nvcc")
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if found is None and home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
        found = os.path.join(home, "bin", "nvcc")
    if found is None:
        raise CudaCompileError("nvcc not found on PATH (nor in $CUDA_HOME/bin)")
    return found


@functools.cache
def _nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "unknown"


def _nvrtc_id() -> str:
    version = nvrtc_version()
    if version is None:
        raise CudaCompileError("NVRTC is not available (cuda.bindings could not load libnvrtc)")
    return f"nvrtc-{version[0]}.{version[1]}"


# ----------------------------------------------------------------------------- compilers


def _check_nvrtc(result: tuple, call: str) -> tuple:
    from cuda.bindings import nvrtc

    if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(result[0])
        raise CudaCompileError(f"{call} failed: {msg.decode()}")
    return result[1:]


def _run_nvrtc(source: str, name: str, arch: str, output: Literal["ptx", "cubin"]) -> bytes:
    """Compile with NVRTC in-process; return the PTX text (no NUL) or CUBIN bytes."""
    from cuda.bindings import nvrtc

    target = f"compute_{check_arch(arch)}" if output == "ptx" else arch
    opts = [f"--gpu-architecture={target}".encode(), *(f.encode() for f in COMMON_FLAGS)]
    (prog,) = _check_nvrtc(
        nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []), "nvrtcCreateProgram"
    )
    try:
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            (size,) = _check_nvrtc(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
            log = bytearray(size)
            _check_nvrtc(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
            text = log.rstrip(b"\0").decode(errors="replace")
            if not text:  # e.g. NVRTC_ERROR_INVALID_OPTION leaves no log
                text = nvrtc.nvrtcGetErrorString(result)[1].decode()
            raise _compile_error("NVRTC", name, arch, text)
        get_size, get = ((nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX) if output == "ptx"
                         else (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN))
        (size,) = _check_nvrtc(get_size(prog), get_size.__name__)
        data = bytearray(size)
        _check_nvrtc(get(prog, data), get.__name__)
        return bytes(data.rstrip(b"\0")) if output == "ptx" else bytes(data)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _run_nvcc(source: str, name: str, arch: str, mode: str, extra: tuple[str, ...] = ()
              ) -> tuple[bytes, str]:
    """Run `nvcc <mode> -arch=<arch>` on `source`; return (output file bytes, compiler log)."""
    nvcc = _nvcc_path()
    check_arch(arch)
    with tempfile.TemporaryDirectory(prefix="tmlir-nvcc-") as tmp:
        src, out = Path(tmp) / name, Path(tmp) / "out"
        src.write_text(source)
        cmd = [nvcc, mode, f"-arch={arch}", *COMMON_FLAGS, *extra, "-x", "cu", name, "-o", "out"]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
        log = (proc.stdout + proc.stderr).replace(f"{tmp}/", "")
        if proc.returncode != 0:
            raise _compile_error("nvcc", name, arch, log)
        return out.read_bytes(), log


def _resolve(compiler: Compiler) -> Literal["nvrtc", "nvcc"]:
    if compiler == "auto":
        return "nvrtc" if nvrtc_version() is not None else "nvcc"
    if compiler not in ("nvrtc", "nvcc"):
        raise ValueError(f"unknown compiler {compiler!r}; valid: auto, nvrtc, nvcc")
    return compiler


def _toolchain(compiler: Compiler) -> tuple[Literal["nvrtc", "nvcc"], str]:
    """The compiler `compiler` stands for, and its version string (part of cache keys)."""
    which = _resolve(compiler)
    return which, _nvrtc_id() if which == "nvrtc" else _nvcc_version(_nvcc_path())


def _cache_entry(source: str, arch: str, toolchain: tuple[Literal["nvrtc", "nvcc"], str],
                 name: str, output: Literal["ptx", "cubin"]
                 ) -> tuple[str, Callable[[Path], None]]:
    """The cache key of compiling `source` and the function that builds the artifact."""
    which, version = toolchain
    key = cache_key(output, source, arch, which, " ".join(COMMON_FLAGS), version)

    def build(path: Path) -> None:
        if which == "nvrtc":
            path.write_bytes(_run_nvrtc(source, name, arch, output))
        else:
            path.write_bytes(_run_nvcc(source, name, arch, f"-{output}")[0])

    return key, build


def _compile(source: str, arch: str, compiler: Compiler, name: str,
             output: Literal["ptx", "cubin"]) -> bytes:
    check_arch(arch)
    key, build = _cache_entry(source, arch, _toolchain(compiler), name, output)
    return cached_file(key, f".{output}", build).read_bytes()


def compile_ptx(source: str, arch: str = "sm_90", *, compiler: Compiler = "auto",
                name: str = "kernels.cu") -> str:
    """Compile CUDA C `source` to PTX text for `arch` (cached).

    `compiler="auto"` uses NVRTC when its library loads, otherwise `nvcc -ptx`. `name` is the
    file name used in diagnostics. Raises CudaCompileError on a compile error and ValueError
    for an unsupported `arch`.
    """
    return _compile(source, arch, compiler, name, "ptx").decode()


def compile_jobs(jobs: int | None = None) -> int:
    """How many kernels to compile at once: `jobs` if given, else `$TMLIR_JOBS`, else the
    CPUs this process may run on. ValueError unless the choice is a positive integer."""
    if jobs is None:
        text = os.environ.get("TMLIR_JOBS", "").strip()
        if not text:
            return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
                os.cpu_count() or 1)
        if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
            raise ValueError(f"TMLIR_JOBS must be a positive integer, got {text!r}")
        return int(text)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    return jobs


def _kernel_sources(kernels: CudaProgram | Sequence[tuple[str, str]]) -> dict[str, str]:
    pairs = kernels if isinstance(kernels, Sequence) else [
        (k.signature.name, k.source) for k in kernels.kernels]
    sources: dict[str, str] = {}
    for name, source in pairs:
        if name in sources:
            raise ValueError(f"kernel {name!r} is given twice")
        if not source.strip():
            raise ValueError(f"kernel {name!r} has no CUDA C source")
        sources[name] = source
    return sources


def compile_kernels_ptx(kernels: CudaProgram | Sequence[tuple[str, str]], arch: str = "sm_90",
                        *, compiler: Compiler = "auto", jobs: int | None = None
                        ) -> dict[str, str]:
    """Compile each kernel to PTX on its own (cached per kernel); kernel name -> PTX text.

    `kernels` is a `CudaProgram` (its kernels' own `source`) or (name, CUDA C) pairs, each
    source compilable alone. Kernels missing from the cache are compiled by `compile_jobs(jobs)`
    threads, largest first; when every kernel is cached no thread is started. A compile
    error is a CudaCompileError naming the kernel's file, `<name>.cu`; kernels compiled before
    it stay cached. ValueError for an unsupported `arch` or a bad `jobs`/`$TMLIR_JOBS`.
    """
    check_arch(arch)
    sources = _kernel_sources(kernels)
    workers = compile_jobs(jobs)
    toolchain = _toolchain(compiler)
    entries = {name: _cache_entry(source, arch, toolchain, f"{name}.cu", "ptx")
               for name, source in sources.items()}
    ptx: dict[str, str] = {}
    for name, (key, _) in entries.items():
        if (cached := cached_path(key, ".ptx")) is not None:
            ptx[name] = cached.read_text()
    missing = sorted((n for n in sources if n not in ptx), key=lambda n: -len(sources[n]))

    def compile_one(name: str) -> str:
        return cached_file(entries[name][0], ".ptx", entries[name][1]).read_text()

    if min(workers, len(missing)) <= 1:
        ptx.update((name, compile_one(name)) for name in missing)
    else:
        with ThreadPoolExecutor(min(workers, len(missing)), "tmlir-ptx") as pool:
            futures = [pool.submit(compile_one, name) for name in missing]
            try:
                ptx.update((name, f.result()) for name, f in zip(missing, futures))
            except BaseException:
                pool.shutdown(cancel_futures=True)
                raise
    return {name: ptx[name] for name in sources}


def compile_cubin(source: str, arch: str = "sm_90", *, compiler: Compiler = "auto",
                  name: str = "kernels.cu") -> bytes:
    """Compile CUDA C `source` to a CUBIN for `arch` (cached); see `compile_ptx`."""
    return _compile(source, arch, compiler, name, "cubin")


def ptx_kernel_names(ptx: str) -> list[str]:
    """Names of the kernels (`.entry` directives) in `ptx`, in order."""
    return re.findall(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)", ptx, re.M)


# ----------------------------------------------------------------------------- ptxas


@dataclass(frozen=True)
class KernelStats:
    """Per-kernel resource usage as reported by `ptxas -v`.

    `spill_bytes` is spill stores plus spill loads; `local_bytes` is the stack frame
    (local arrays and spill slots); `shared_bytes` is static shared memory (with the
    dynamic shared memory of a program's kernel added by `with_dynamic_shared`).
    """

    registers: int
    spill_bytes: int
    shared_bytes: int
    local_bytes: int


_ENTRY_RE = re.compile(r"Compiling entry function '([^']+)'")
_PROPS_RE = re.compile(r"Function properties for (\S+)")
_FRAME_RE = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED_RE = re.compile(r"Used (\d+) registers")
_SMEM_RE = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(log: str) -> dict[str, KernelStats]:
    """Parse the `ptxas info` lines of `nvcc -Xptxas -v` into stats per kernel entry."""
    frames: dict[str, tuple[int, int]] = {}  # name -> (stack frame, spill bytes)
    used: dict[str, tuple[int, int]] = {}  # entry -> (registers, smem)
    entry = props = None
    for line in log.splitlines():
        if m := _ENTRY_RE.search(line):
            entry = m.group(1)
        elif m := _PROPS_RE.search(line):
            props = m.group(1)
        elif (m := _FRAME_RE.search(line)) and props is not None:
            frames[props] = (int(m.group(1)), int(m.group(2)) + int(m.group(3)))
        elif (m := _USED_RE.search(line)) and entry is not None:
            smem = _SMEM_RE.search(line)
            used[entry] = (int(m.group(1)), int(smem.group(1)) if smem else 0)
    return {
        name: KernelStats(registers=regs, spill_bytes=frames.get(name, (0, 0))[1],
                          shared_bytes=smem, local_bytes=frames.get(name, (0, 0))[0])
        for name, (regs, smem) in used.items()
    }


def with_dynamic_shared(stats: dict[str, KernelStats], dynamic: Mapping[str, int]) -> dict[str, KernelStats]:
    """`stats` with each kernel's bytes of dynamic shared memory (`dynamic`, by kernel name:
    ``KernelInfo.dynamic_shared_bytes``) added to its `shared_bytes`: ptxas only sees the
    static arrays, and a block takes both."""
    return {name: dataclasses.replace(s, shared_bytes=s.shared_bytes + dynamic.get(name, 0))
            for name, s in stats.items()}


def ptxas_stats(source: str, arch: str = "sm_90", *,
                max_registers: int | None = None) -> dict[str, KernelStats]:
    """Registers, spills, shared and local memory of each kernel in `source` (cached).

    Runs `nvcc -cubin -arch=<arch> -Xptxas -v` (plus `-maxrregcount` when `max_registers`
    is given) and parses its report; keys are the (unmangled, `extern "C"`) kernel names.
    """
    check_arch(arch)
    nvcc = _nvcc_path()
    extra = ("-Xptxas", "-v") + ((f"-maxrregcount={max_registers}",) if max_registers else ())
    flags = " ".join(COMMON_FLAGS + extra)
    key = cache_key("ptxas-v", source, arch, "nvcc", flags, _nvcc_version(nvcc))

    def build(path: Path) -> None:
        path.write_text(_run_nvcc(source, "kernels.cu", arch, "-cubin", extra)[1])

    return parse_ptxas_log(cached_file(key, ".ptxas.txt", build).read_text())


def _nvrtc_ptxas_log(source: str, arch: str) -> str:
    """The ``ptxas -v`` report of compiling `source` to a CUBIN for `arch` with NVRTC."""
    from cuda.bindings import nvrtc

    opts = [f"--gpu-architecture={arch}".encode(), *(f.encode() for f in COMMON_FLAGS),
            b"--ptxas-options=-v"]
    (prog,) = _check_nvrtc(nvrtc.nvrtcCreateProgram(source.encode(), b"kernels.cu", 0, [], []),
                           "nvrtcCreateProgram")
    try:
        (result,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        (size,) = _check_nvrtc(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        log = bytearray(size)
        _check_nvrtc(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
        text = log.rstrip(b"\0").decode(errors="replace")
        if result != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise _compile_error("NVRTC", "kernels.cu", arch, text)
        return text
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def kernel_stats(source: str, arch: str = "sm_90",
                 compiler: Literal["auto", "nvrtc", "nvcc"] = "auto") -> dict[str, KernelStats]:
    """ptxas' statistics of every kernel of `source` (cached): NVRTC's report (``auto``
    when its library loads, or ``nvrtc``), else nvcc's (`ptxas_stats`)."""
    check_arch(arch)
    version = nvrtc_version()
    if compiler == "nvrtc" and version is None:
        raise CudaCompileError("NVRTC is not available (cuda.bindings could not load libnvrtc)")
    if compiler == "nvcc" or version is None:
        return ptxas_stats(source, arch)
    key = cache_key("nvrtc-ptxas-v", source, arch, " ".join(COMMON_FLAGS),
                    f"nvrtc-{version[0]}.{version[1]}")

    def build(path: Path) -> None:
        path.write_text(_nvrtc_ptxas_log(source, arch))

    return parse_ptxas_log(cached_file(key, ".ptxas.txt", build).read_text())
