"""``InferenceSession.run`` from several threads at once stays correct."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from models import dynamic_mlp, mlp

import tmlir

THREADS = 6
RUNS = 4


def _feeds(batch_sizes, features: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((b, features)).astype(np.float32) for b in batch_sizes]


def _run_concurrently(session, feeds) -> list[np.ndarray]:
    def work(x):
        return session.run(None, {"x": x})[0]

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(work, feeds))


def test_concurrent_runs_of_one_variant_do_not_share_temporaries() -> None:
    # Unfused, every layer's result is a temporary of the arena: runs sharing one arena
    # would read each other's hidden layers.
    session = tmlir.InferenceSession(mlp(16, [64, 128, 128, 128, 8]), fusion=False)
    feeds = _feeds([16] * (THREADS * RUNS), 64)
    expected = [session.run(None, {"x": x})[0] for x in feeds]
    for _ in range(2):
        got = _run_concurrently(session, feeds)
        for want, have in zip(expected, got):
            np.testing.assert_array_equal(have, want)


def test_concurrent_runs_compile_each_new_shape_once() -> None:
    session = tmlir.InferenceSession(dynamic_mlp())
    sizes = [1, 2, 3, 5] * (THREADS * RUNS // 4)
    feeds = _feeds(sizes, 8, seed=1)
    got = _run_concurrently(session, feeds)
    assert len(session._variants) == 4
    reference = tmlir.InferenceSession(dynamic_mlp())
    for x, have in zip(feeds, got):
        np.testing.assert_array_equal(have, reference.run(None, {"x": x})[0])
