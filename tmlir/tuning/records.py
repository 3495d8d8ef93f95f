"""Tuning records: the best parameters of a kernel signature on a device, kept on disk.

One JSON object per line, one line per (kernel signature, device name, arch, tmlir
version)::

    {"signature": "matmul_simt(lhs_shape=64x2048, ...; f32)", "template": "matmul_simt",
     "device": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "tmlir": "0.1.0",
     "params": {"block_warps": [4, 2], "warp_outer": [2, 2], "lanes": [4, 8],
                "thread_inner": [4, 4], "block_k": 8},
     "seconds": 3.1e-05, "candidates": 184, "timed": 150, "date": "2026-11-25T12:00:00+00:00"}

``params`` are the fields of the template's parameter object (`MatmulSimtParams` for the
SIMT templates, `MatmulGemvParams` for ``matmul_gemv``: ``{"warps": 8, "vector": 4,
"unroll": 4, "block_n": 8}``, `MatmulTcParams` for ``matmul_tc``: ``{"block_m": 64,
"block_n": 64, "block_k": 32, "warps": [2, 2], "stages": 3}``).

The file is `default_records_path()` (``$TMLIR_TUNING_RECORDS``, else
``tuning_records.jsonl`` in the cache directory) unless a path is given. `TuningRecords.add`
rewrites it whole under an exclusive lock (``fcntl.flock`` on ``<file>.lock``): it reads
the records, merges the new ones (a new record replaces the one with its key), writes a
temporary file in the same directory and renames it over the old one. A crash leaves the
old file or the new one, never a truncated one, and concurrent writers never lose each
other's records.

A compile finds the records through `recorded_params`, the `TunedParams` lookup that
``convert-graph-to-tm`` hands to the templates when it is given a target device: the
record of the signature for that device, arch and this tmlir version. A record whose
parameters are not a valid candidate of the kernel's space (the space changed), are of
another template's kind, or that names another template, is ignored with a warning, and
the template's default is used.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tmlir import __version__
from tmlir.backends.cache import cache_dir
from tmlir.schedules.matmul_simt import MatmulSimtParams
from tmlir.schedules.templates import TemplateParams, TunableProblem, TunedParams

#: Environment variable naming the records file.
RECORDS_ENV = "TMLIR_TUNING_RECORDS"
RECORDS_FILE = "tuning_records.jsonl"


def default_records_path() -> Path:
    """``$TMLIR_TUNING_RECORDS``, else ``tuning_records.jsonl`` in the cache directory."""
    path = os.environ.get(RECORDS_ENV)
    return Path(path) if path else cache_dir() / RECORDS_FILE


@dataclass(frozen=True)
class TuningTarget:
    """The device code is tuned for, or compiled for: its name as ``cuDeviceGetName``
    reports it and its arch (``sm_90``)."""

    device_name: str
    arch: str = "sm_90"

    @classmethod
    def current(cls) -> TuningTarget:
        """GPU 0 of this machine (CudaRuntimeError without one)."""
        from cuda.bindings import driver

        from tmlir.backends.cuda_runtime import _call, _context, device_arch

        _context()
        device = _call(driver.cuDeviceGet, 0)
        name = _call(driver.cuDeviceGetName, 256, device)
        return cls(bytes(name).split(b"\0")[0].decode(), device_arch())


def params_to_json(params: TemplateParams) -> dict:
    """The fields of a parameter object, pairs as lists."""
    return {f.name: list(v) if isinstance(v := getattr(params, f.name), tuple) else v
            for f in dataclasses.fields(params)}


def params_from_json(data: dict, kind: type = MatmulSimtParams) -> TemplateParams:
    """The parameters of a record as a `kind` (`MatmulSimtParams` or `MatmulTcParams`);
    ValueError if they are not of that kind."""
    if not isinstance(data, dict):
        raise ValueError(f"bad parameters {data!r}: not an object")
    try:
        return kind(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad parameters {data} for {kind.__name__}: {exc}") from None


@dataclass(frozen=True)
class TuningRecord:
    """The best parameters of one kernel signature on one device."""

    signature: str
    template: str
    device: str
    arch: str
    params: dict
    seconds: float
    candidates: int
    timed: int
    tmlir: str = __version__
    date: str = ""

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.signature, self.device, self.arch, self.tmlir)

    @classmethod
    def of(cls, signature: str, template: str, target: TuningTarget, params: TemplateParams,
           seconds: float, candidates: int, timed: int) -> TuningRecord:
        """A new record, dated now."""
        return cls(signature, template, target.device_name, target.arch,
                   params_to_json(params), seconds, candidates, timed, __version__,
                   datetime.now(UTC).isoformat(timespec="seconds"))

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> TuningRecord:
        """ValueError for a line that is not a record."""
        try:
            data = json.loads(line)
            names = {f.name for f in dataclasses.fields(cls)}
            return cls(**{k: v for k, v in data.items() if k in names})
        except (json.JSONDecodeError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a tuning record: {exc}") from None


class TuningRecords:
    """The records file at `path` (default `default_records_path()`)."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path is not None else default_records_path()

    def load(self) -> dict[tuple[str, str, str, str], TuningRecord]:
        """Every record by key (a later line wins); malformed lines are skipped with a
        warning. An absent file has no records."""
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return {}
        records = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = TuningRecord.from_json(line)
            except ValueError as exc:
                warnings.warn(f"{self.path}:{number}: skipped: {exc}", stacklevel=2)
                continue
            records[record.key] = record
        return records

    def add(self, new: Iterable[TuningRecord]) -> None:
        """Merge `new` into the file (replacing records with the same key), atomically."""
        new = list(new)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._locked():
            records = self.load()
            records.update((r.key, r) for r in new)
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w") as out:
                    out.writelines(r.to_json() + "\n" for r in records.values())
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, self.path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def lookup(self, signature: str, target: TuningTarget) -> TuningRecord | None:
        return self.load().get((signature, target.device_name, target.arch, __version__))


def recorded_params(target: TuningTarget, path: str | os.PathLike | None = None
                    ) -> TunedParams:
    """The lookup a compile for `target` uses: the recorded parameters of a tunable
    kernel, or None (no record, or an invalid one: warned about). The file is read once,
    when the lookup is made.

    The lookup takes the template and problem (`TunedParams`), and optionally the
    operands' element type (``f16``/``bf16``; `TunableKernel.element`): a tensor-core
    matmul looked up without it takes the record of its first element type that has one
    (f16, then bf16)."""
    from tmlir.tuning.space import TEMPLATES, TunableKernel

    records = TuningRecords(path)
    table = records.load()

    def lookup(template: str, problem: TunableProblem, element: str = "") -> TemplateParams | None:
        elements = [element] if element else list(TEMPLATES[template].elements)
        for name in elements:
            kernel = TunableKernel(template, problem, name, target.arch)
            record = table.get((kernel.signature, target.device_name, target.arch, __version__))
            if record is not None:
                return _checked(kernel, record)
        return None

    def _checked(kernel: TunableKernel, record: TuningRecord) -> TemplateParams | None:
        try:
            params = params_from_json(record.params, kernel.info.params)
        except ValueError as exc:
            params, why = None, str(exc)
        else:
            why = "" if kernel.is_valid(params) else f"{params_to_json(params)} is not in its space"
        if record.template != kernel.template:
            why = f"recorded for template '{record.template}', not '{kernel.template}'"
        if params is None or why:
            warnings.warn(f"{records.path}: ignored the record of {kernel.signature} on "
                          f"{target.device_name} ({why}); using the default", stacklevel=3)
            return None
        return params

    return lookup
