"""``tm-cache``: inspect, clear, prune and verify the compiled-artifact cache.

    tm-cache info                 # directory, entries by kind, bytes, bound, temporary files
    tm-cache info --json          # the same as one JSON object
    tm-cache prune                # stale temporary files, unrecorded entries, LRU to the bound
    tm-cache prune --max-bytes 500M --older-than 30
    tm-cache verify               # hash every entry, delete the bad ones (exit status 1 if any)
    tm-cache clear                # every entry (run it while nothing else uses the cache)

The cache is ``$TMLIR_CACHE_DIR`` (default ``~/.cache/tmlir``); its bound is
``$TMLIR_CACHE_MAX_BYTES`` (default 2 GiB, 0 = unbounded). The tuning records kept in the
same directory are never removed. Usage errors are one line and exit status 2; a cache that
cannot be used is one line, ``tm-cache: error: ...``, and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from tmlir.backends.cache import MAX_BYTES_ENV, CacheError, parse_bytes
from tmlir.backends.cache_maintenance import (
    CacheInfo,
    Removal,
    cache_info,
    clear_cache,
    prune_cache,
    verify_cache,
)
from tmlir.tools.cli import ToolParser, one_line_failures


def byte_count(text: str) -> int:
    """An argparse type: a byte count (``1000``, ``500M``, ``2G``)."""
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def days(text: str) -> float:
    """An argparse type: a number of days, at least 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of days (at least 0), got '{text}'")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``tm-cache``'s command line."""
    parser = ToolParser(prog="tm-cache", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="command",
                                     parser_class=ToolParser)
    info = commands.add_parser("info", help="what the cache holds")
    info.add_argument("--json", action="store_true", help="one JSON object")
    commands.add_parser("clear", help="remove every entry and temporary file")
    prune = commands.add_parser("prune", help="remove stale, unused and least recently used entries")
    prune.add_argument("--max-bytes", type=byte_count, default=None, metavar="N",
                       help=f"keep at most N bytes of entries (default: ${MAX_BYTES_ENV}, else 2G; "
                            "0: no limit)")
    prune.add_argument("--older-than", type=days, default=None, metavar="DAYS",
                       help="remove entries not used for DAYS days")
    commands.add_parser("verify", help="check every entry against its record, delete bad ones")
    return parser


def human(size: int) -> str:
    """A byte count for people: ``512 B``, ``1.5 KiB``, ``2.0 GiB``."""
    value, unit = float(size), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"


def _count(pair: tuple[int, int]) -> str:
    return f"{pair[0]} ({human(pair[1])})"


def print_info(info: CacheInfo) -> None:
    """The report of ``tm-cache info``."""
    bound = "none (0: unbounded)" if not info.max_bytes else (
        f"{human(info.max_bytes)} ({info.max_bytes} bytes)")
    entries = sum(n for n, _ in info.kinds.values())
    used = f", {100 * info.entry_bytes / info.max_bytes:.1f}% of the bound" if info.max_bytes else ""
    print(f"directory: {info.directory}")
    print(f"bound: {bound}; set ${MAX_BYTES_ENV} to change it")
    print(f"entries: {entries} ({human(info.entry_bytes)}{used})")
    width = max((len(k) for k in info.kinds), default=0)
    for kind, (count, size) in info.kinds.items():
        print(f"  {kind.ljust(width)}  {count:6d}  {human(size):>10}")
    print(f"unrecorded entries (never used, `prune` removes them): {_count(info.unrecorded)}")
    print(f"temporary files: {_count(info.temps)}, stale: {_count(info.stale_temps)}")
    print(f"orphan records: {_count(info.orphan_records)}")
    print(f"other files (kept): {_count(info.others)}")
    print(f"total: {human(info.total_bytes)} ({info.total_bytes} bytes)")


def info_json(info: CacheInfo) -> dict:
    """``tm-cache info --json``'s object."""
    pair = lambda p: {"count": p[0], "bytes": p[1]}  # noqa: E731
    return {"directory": str(info.directory), "max_bytes": info.max_bytes,
            "entry_bytes": info.entry_bytes, "total_bytes": info.total_bytes,
            "kinds": {k: pair(v) for k, v in info.kinds.items()},
            "unrecorded": pair(info.unrecorded), "temps": pair(info.temps),
            "stale_temps": pair(info.stale_temps), "orphan_records": pair(info.orphan_records),
            "others": pair(info.others)}


def _removed(removal: Removal) -> str:
    return (f"removed {removal.entries} entries, {removal.temps} temporary files and "
            f"{removal.records} orphan records ({human(removal.bytes)})")


def run(args: argparse.Namespace) -> int:
    """Run the command `args` names; its exit status."""
    if args.command == "info":
        info = cache_info()
        if args.json:
            print(json.dumps(info_json(info)))
        else:
            print_info(info)
    elif args.command == "clear":
        print(f"{_removed(clear_cache())}; other files kept")
    elif args.command == "prune":
        removal = prune_cache(args.max_bytes, args.older_than)
        after = cache_info()
        count = sum(n for n, _ in after.kinds.values())
        print(f"{_removed(removal)}; {count} entries left ({human(after.entry_bytes)})")
    else:
        report = verify_cache()
        for path, why in report.bad:
            print(f"bad: {path}: {why} (deleted)")
        verdict = "all good" if not report.bad else (
            f"{len(report.bad)} bad, deleted ({human(report.bytes)})")
        print(f"checked {report.checked} entries: {verdict}")
        return 1 if report.bad else 0
    return 0


@one_line_failures("tm-cache")
def main(argv: Sequence[str] | None = None) -> int:
    """``tm-cache``'s entry point; its exit status."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except CacheError as exc:
        print(f"tm-cache: error: {exc}", file=sys.stderr)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        print(f"tm-cache: error: {args.command}: {exc.strerror or exc}{where}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
