"""Shared fixtures of the tuning tests: a small conv net and an isolated artifact cache."""

from __future__ import annotations

import onnx
import pytest
from tuning_models import conv_net


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory, monkeypatch):
    """Each test module compiles into its own cache and records file (not the user's)."""
    root = tmp_path_factory.getbasetemp() / "tuning-cache"
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(root))
    monkeypatch.delenv("TMLIR_TUNING_RECORDS", raising=False)


@pytest.fixture
def conv_net_path(tmp_path):
    path = tmp_path / "conv_net.onnx"
    onnx.save(conv_net(), path)
    return path
