"""On/off environment variables (tmlir.env)."""

from __future__ import annotations

import pytest

from tmlir.env import env_flag


@pytest.mark.parametrize("value, flag", [("1", True), (" On ", True), ("yes", True), ("TRUE", True),
                                         ("0", False), ("off", False), ("No", False), ("false ", False),
                                         ("", None), ("maybe", None)])
def test_env_flag_reads_on_off_and_nothing_else(monkeypatch, value: str, flag: bool | None) -> None:
    monkeypatch.setenv("TMLIR_TEST_FLAG", value)
    assert env_flag("TMLIR_TEST_FLAG") is flag


def test_an_unset_variable_is_none(monkeypatch) -> None:
    monkeypatch.delenv("TMLIR_TEST_FLAG", raising=False)
    assert env_flag("TMLIR_TEST_FLAG") is None
