"""Whole-compile cache: a second ``compile_model`` of the same model skips import and passes.

An entry is keyed by a SHA-256 (`compile_key`) of everything that decides the result:
the model's bytes (a file's contents, serialized bytes, or a ModelProto's serialization)
and those of its external data files, the input shapes, ``fusion``, ``precision``, the target device and
arch, the tuning records file when a target device is given (without one, records are
not read), and the tmlir version with a digest of the tmlir package's own files (so an
edited compiler never reuses an old entry). The key is computed from bytes alone, before
any import: the model is read once, hashed, and its initializers located by a scan of the
protobuf wire format (`initializer_spans`), without parsing it.

The value is one file, ``<key>.compile.zip`` in the cache directory (`cache_dir`), written
atomically (`cached_file`)::

    program.json    {"format": 1, "key": ..., "program": <CudaProgram as JSON>,
                     "weights": [{"name": ..., "dtype": ..., "shape": [...],
                                  "stored": true | false}, ...]}
    weights/<i>.npy the weights the compiler computed (``"stored": true``)

The program is written generically over its dataclass fields (`to_json`, `from_json`),
and only written when it reads back equal. A weight that is an initializer verbatim
(same name, dtype, shape and bytes) is not stored: a hit takes it from the model's bytes,
as a read-only view of the data already read for the key. Everything read back is
checked (zip CRCs, JSON structure, key, weight names, dtypes and shapes, a weight for
each weight buffer); an entry that fails any check is reported by one warning, deleted,
and compiled again.

``TMLIR_COMPILE_CACHE=0`` turns the cache off.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import types
import typing
import warnings
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tmlir import dtypes
from tmlir.backends.cache import cache_dir, cache_key, cached_file, mark_used
from tmlir.backends.cuda_c import CudaProgram
from tmlir.env import env_flag

#: Environment variable: ``0`` (or ``false``, ``off``, ``no``) turns the cache off.
CACHE_ENV = "TMLIR_COMPILE_CACHE"
SUFFIX = ".compile.zip"
FORMAT = 2

Compiled = tuple[CudaProgram, dict[str, np.ndarray]]


def enabled() -> bool:
    """Whether compiles use the cache (``$TMLIR_COMPILE_CACHE`` is not 0/false/off/no)."""
    return env_flag(CACHE_ENV) is not False


# -- the model's bytes ----------------------------------------------------------------------

@dataclass(frozen=True)
class Span:
    """Where an initializer's data lies: in `file` ("" for the model itself, else the
    location of an external data file) at byte `offset`, `length` bytes (-1: to the end
    of the file), little-endian, of ONNX element type `onnx_type` and dims `dims`."""

    file: str
    offset: int
    length: int
    onnx_type: int
    dims: tuple[int, ...]


@dataclass(frozen=True)
class ModelBytes:
    """The bytes a compile reads: the serialized model, its external data files by
    location (None: unreadable), and where its initializers' data lie."""

    model: bytes
    external: dict[str, bytes | None]
    spans: dict[str, Span]

    @classmethod
    def read(cls, model: Any) -> ModelBytes:
        """The bytes of a model given as a path, serialized bytes or a ModelProto; external
        data is found beside a path, else in the working directory (as the importer does).
        OSError if the file cannot be read."""
        if isinstance(model, str | os.PathLike):
            data, base_dir = Path(model).read_bytes(), os.path.dirname(os.fspath(model))
        elif isinstance(model, bytes | bytearray):
            data, base_dir = bytes(model), ""
        else:
            data, base_dir = model.SerializeToString(), ""
        try:
            spans = initializer_spans(data)
        except ValueError:  # not a protobuf: the import will say so
            spans = {}
        external: dict[str, bytes | None] = {}
        for location in sorted({s.file for s in spans.values() if s.file}):
            try:
                external[location] = Path(base_dir, location).read_bytes()
            except OSError:
                external[location] = None
        return cls(data, external, spans)

    def digest(self) -> str:
        """A SHA-256 of the model and its external data (with their locations)."""
        digest = hashlib.sha256(self.model)
        for location, data in self.external.items():
            digest.update(f"\0{location}\0{-1 if data is None else len(data)}\0".encode())
            digest.update(hashlib.sha256(data or b"").digest())
        return digest.hexdigest()

    def initializer(self, name: str) -> np.ndarray | None:
        """The data of initializer `name` as a read-only view of the bytes read (None
        when it has no span, or one that does not fit its type and dims)."""
        span = self.spans.get(name)
        if span is None:
            return None
        buffer = self.external.get(span.file) if span.file else self.model
        dtype = dtypes.from_onnx(span.onnx_type)
        if buffer is None or dtype is None or span.offset < 0:
            return None
        length = len(buffer) - span.offset if span.length < 0 else span.length
        count = int(np.prod(span.dims, dtype=np.int64))
        little = dtype.numpy.newbyteorder("<")
        if count * little.itemsize != length or span.offset + length > len(buffer):
            return None
        return np.frombuffer(buffer, little, count, span.offset).reshape(span.dims)


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at data[pos:end] and the position after it."""
    result = shift = 0
    while pos < end and shift < 64:
        byte = data[pos]
        result |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return result, pos
        shift += 7
    raise ValueError("bad varint")


def _fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(number, wire type, start, end) of each field of the message in data[start:end];
    for a varint, start is its value. ValueError where the message is malformed."""
    pos = start
    while pos < end:
        tag, pos = _varint(data, pos, end)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos, end)
            yield number, wire, value, pos
            continue
        size = {1: 8, 5: 4}.get(wire)
        if wire == 2:
            size, pos = _varint(data, pos, end)
        if size is None or pos + size > end:
            raise ValueError(f"bad field {number} (wire type {wire})")
        yield number, wire, pos, pos + size
        pos += size


# Field numbers of onnx.proto: ModelProto.graph, GraphProto.initializer, TensorProto's.
_GRAPH, _INITIALIZER = 7, 5
_DIMS, _DATA_TYPE, _NAME, _RAW_DATA, _EXTERNAL_DATA, _DATA_LOCATION = 1, 2, 8, 9, 13, 14


def initializer_spans(data: bytes) -> dict[str, Span]:
    """The span of each initializer of a serialized ModelProto whose data is raw bytes
    (``raw_data`` or external data), by name, found by walking the protobuf wire format;
    ValueError if `data` is not a well-formed message. Initializers with typed data
    (``float_data``, ``int64_data``, ...) have none."""
    spans = {}
    for number, wire, start, end in _fields(data, 0, len(data)):
        if number != _GRAPH or wire != 2:
            continue
        for number, wire, t_start, t_end in _fields(data, start, end):
            if number == _INITIALIZER and wire == 2 and (found := _tensor_span(data, t_start, t_end)):
                spans[found[0]] = found[1]
    return spans


def _tensor_span(data: bytes, start: int, end: int) -> tuple[str, Span] | None:
    name, dims, onnx_type, raw, location = "", [], 0, None, 0
    external: dict[str, str] = {}
    for number, wire, f_start, f_end in _fields(data, start, end):
        if number == _DIMS and wire == 0:
            dims.append(f_start)
        elif number == _DIMS and wire == 2:  # packed
            pos = f_start
            while pos < f_end:
                dim, pos = _varint(data, pos, f_end)
                dims.append(dim)
        elif number == _DATA_TYPE and wire == 0:
            onnx_type = f_start
        elif number == _NAME and wire == 2:
            name = data[f_start:f_end].decode("utf-8", "replace")
        elif number == _RAW_DATA and wire == 2:
            raw = (f_start, f_end)
        elif number == _DATA_LOCATION and wire == 0:
            location = f_start
        elif number == _EXTERNAL_DATA and wire == 2:
            entry = {n: data[s:e].decode("utf-8", "replace")
                     for n, w, s, e in _fields(data, f_start, f_end) if w == 2}
            external[entry.get(1, "")] = entry.get(2, "")
    if location == 1:  # EXTERNAL: a missing length is the rest of the file
        if not external.get("location"):
            return None
        offset, length = external.get("offset", "0"), external.get("length", "")
        return name, Span(external["location"], int(offset) if offset.isdigit() else -1,
                          int(length) if length.isdigit() else -1, onnx_type, tuple(dims))
    if raw is None:
        return None
    return name, Span("", raw[0], raw[1] - raw[0], onnx_type, tuple(dims))


# -- the key --------------------------------------------------------------------------------

@functools.cache
def source_digest() -> str:
    """A SHA-256 of the tmlir package's own files (computed once per process)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if "__pycache__" in path.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        data = path.read_bytes()
        digest.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def records_digest(tuning_records: str | os.PathLike | None) -> str:
    """A SHA-256 of the tuning records file a compile with a target device reads."""
    from tmlir.tuning.records import TuningRecords

    try:
        return hashlib.sha256(TuningRecords(tuning_records or None).path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "absent"


def compile_key(model_digest: str, input_shapes: Mapping[str, Sequence[int]] | None,
                fusion: bool, target_device: str, target_arch: str,
                tuning_records: str | os.PathLike | None,
                input_values: Mapping[str, np.ndarray] | None = None, precision: str = "fp32") -> str:
    """The key of a compile; TypeError or ValueError if `input_shapes` are not integers."""
    shapes = sorted((str(name), [int(d) for d in shape])
                    for name, shape in (input_shapes or {}).items())
    values = sorted((str(name), str(array.dtype), list(array.shape),
                     hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest())
                    for name, array in ((n, np.asarray(v)) for n, v in (input_values or {}).items()))
    options = json.dumps({"shapes": shapes, "fusion": bool(fusion), "device": target_device,
                          "arch": target_arch, "precision": str(precision),
                          **({"values": values} if values else {})})
    records = records_digest(tuning_records) if target_device else ""
    return cache_key(f"compile-format-{FORMAT}", source_digest(), model_digest, options, records)


# -- dataclasses as JSON --------------------------------------------------------------------

def to_json(value: Any) -> Any:
    """A dataclass (nested in tuples, lists and dicts of scalars) as JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("only dicts with str keys can be written as JSON")
        return {k: to_json(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_json(hint: Any, data: Any) -> Any:
    """The value of type `hint` that `to_json` wrote as `data`; ValueError if `data` does
    not have that type's structure."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        names = [f.name for f in dataclasses.fields(hint) if f.init]
        if not isinstance(data, dict) or sorted(data) != sorted(names):
            raise ValueError(f"{hint.__name__}: expected fields {names}")
        hints = _hints(hint)
        return hint(**{name: from_json(hints[name], data[name]) for name in names})
    if origin in (tuple, list):
        if not isinstance(data, list):
            raise ValueError(f"expected a list for {hint}")
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(data):
                raise ValueError(f"expected {len(args)} items for {hint}")
            return tuple(from_json(a, v) for a, v in zip(args, data))
        items = [from_json(args[0] if args else Any, v) for v in data]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {hint}")
        return {k: from_json(args[1] if args else Any, v) for k, v in data.items()}
    if origin in (typing.Union, types.UnionType):
        for arm in args:
            try:
                return from_json(arm, data)
            except ValueError:
                continue
        raise ValueError(f"{data!r} is not a {hint}")
    if hint is Any:
        return data
    if hint is type(None) and data is None:
        return None
    if hint is float and type(data) in (int, float):
        return float(data)
    if hint in (bool, int, str) and type(data) is hint:
        return data
    raise ValueError(f"{data!r} is not a {hint}")


# -- entries --------------------------------------------------------------------------------

class BadEntry(ValueError):
    """A cache entry that cannot be used."""


def _is_verbatim(model: ModelBytes, name: str, array: np.ndarray) -> bool:
    """Whether weight `array` is initializer `name` exactly: dtype, shape and bytes."""
    initializer = model.initializer(name)
    if initializer is None or initializer.dtype != array.dtype or initializer.shape != array.shape:
        return False
    as_bytes = [np.ascontiguousarray(a.reshape(-1)).view(np.uint8) for a in (initializer, array)]
    return bool(np.array_equal(*as_bytes))


def _dtype_tag(dtype: np.dtype) -> str:
    """How an entry names a weight's dtype: tmlir's name (``bfloat16``, ``float8_e4m3fn``:
    numpy's ``str`` of ml_dtypes' types is raw bytes, ``<V2``), else numpy's ``str``."""
    known = dtypes.from_numpy(dtype)
    return known.name if known is not None else dtype.str


def _dtype_of_tag(tag: str) -> np.dtype:
    known = next((d for d in dtypes.DTYPES if d.name == tag), None)
    return known.numpy if known is not None else np.dtype(tag)


def write_entry(path: Path, key: str, model: ModelBytes, program: CudaProgram,
                weights: Mapping[str, np.ndarray]) -> None:
    """Write the entry of a compile to `path`; TypeError or ValueError if the program
    does not read back equal, or a weight cannot be stored without pickle."""
    encoded = to_json(program)
    if from_json(CudaProgram, json.loads(json.dumps(encoded))) != program:
        raise ValueError("the program does not read back equal from JSON")
    listing, stored = [], []
    for name, array in weights.items():
        keep = not _is_verbatim(model, name, array)
        listing.append({"name": name, "dtype": _dtype_tag(array.dtype), "shape": list(array.shape),
                        "stored": keep})
        if keep:
            if array.dtype.hasobject:
                raise TypeError(f"weight '{name}' has dtype {array.dtype}")
            stored.append(array)
    meta = {"format": FORMAT, "key": key, "program": encoded, "weights": listing}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("program.json", json.dumps(meta))
        for index, array in enumerate(stored):
            with archive.open(f"weights/{index}.npy", "w", force_zip64=True) as out:
                np.lib.format.write_array(out, array, allow_pickle=False)


def read_entry(path: Path, key: str, model: ModelBytes) -> Compiled:
    """The program and weights of the entry at `path`, checked; BadEntry if it is
    unreadable, truncated, or does not match `key` and `model`."""
    try:
        with zipfile.ZipFile(path) as archive:
            meta = json.loads(archive.read("program.json"))
            if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("key") != key:
                raise BadEntry("another format or key")
            program = from_json(CudaProgram, meta["program"])
            weights: dict[str, np.ndarray] = {}
            stored = 0
            for item in meta["weights"]:
                name, dtype, shape = item["name"], _dtype_of_tag(item["dtype"]), tuple(item["shape"])
                if item["stored"]:
                    with archive.open(f"weights/{stored}.npy") as member:
                        array = np.lib.format.read_array(member, allow_pickle=False)
                        if member.read(1):
                            raise BadEntry(f"weight '{name}': trailing data")
                    if array.dtype.kind == "V" and array.dtype.itemsize == dtype.itemsize:
                        array = array.view(dtype)  # .npy keeps ml_dtypes' types as raw bytes
                    stored += 1
                else:
                    array = model.initializer(name)
                    if array is None:
                        raise BadEntry(f"weight '{name}' is not an initializer of the model")
                if array.dtype != dtype or array.shape != shape:
                    raise BadEntry(f"weight '{name}': {array.dtype}{list(array.shape)}, "
                                   f"expected {dtype}{list(shape)}")
                weights[name] = array
            if stored != sum(1 for n in archive.namelist() if n.startswith("weights/")):
                raise BadEntry("stray weight files")
            missing = {b.source for b in program.buffers if b.kind == "weight"} - set(weights)
            if missing:
                raise BadEntry(f"no data for weight '{min(missing)}'")
    except BadEntry:
        raise
    except Exception as exc:  # the file is data from disk: any failure to decode it is damage
        raise BadEntry(f"{type(exc).__name__}: {exc}") from None
    return program, weights


def compile_cached(model: Any, build: Callable[[], Compiled], *,
                   input_shapes: Mapping[str, Sequence[int]] | None, fusion: bool,
                   target_device: str, target_arch: str,
                   tuning_records: str | os.PathLike | None,
                   input_values: Mapping[str, np.ndarray] | None = None,
                   precision: str = "fp32") -> Compiled:
    """`build()`'s program and weights for `model` and these options, from the cache when
    an entry is there, else built and stored. A model that cannot be read or options that
    cannot be keyed are built uncached (the compile reports what is wrong)."""
    if not enabled():
        return build()
    try:
        data = ModelBytes.read(model)
        key = compile_key(data.digest(), input_shapes, fusion, target_device, target_arch,
                          tuning_records, input_values, precision)
        path = cache_dir() / f"{key}{SUFFIX}"
    except Exception:  # an unreadable model or a bad option: the compile says what is wrong
        return build()
    if path.exists():
        try:
            compiled = read_entry(path, key, data)
            mark_used(path)  # for the cache's least-recently-used eviction
            return compiled
        except BadEntry as exc:
            warnings.warn(f"compile cache: ignored {path} ({exc}); compiling again", stacklevel=3)
            path.unlink(missing_ok=True)
    program, weights = build()
    try:
        cached_file(key, SUFFIX, lambda tmp: write_entry(tmp, key, data, program, weights))
    except (OSError, TypeError, ValueError) as exc:
        warnings.warn(f"compile cache: not stored ({type(exc).__name__}: {exc})", stacklevel=3)
    return program, weights
