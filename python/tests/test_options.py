"""``SplitLinearOptions`` validation and how ``torch.compile`` options reach the backend."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch
from _models import CatLinear
from _util import randn

from splitlinear import SplitLinearOptions


def test_defaults() -> None:
    opts = SplitLinearOptions.from_dict(None)
    assert opts == SplitLinearOptions()
    assert (opts.fallback, opts.strict, opts.dump_dir, opts.horizontal_fusion, opts.min_parts) == (
        "inductor", False, None, True, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.strict = True  # type: ignore[misc]


def test_from_dict_and_passthrough() -> None:
    opts = SplitLinearOptions.from_dict({"fallback": "eager", "strict": True, "min_parts": 3,
                                         "horizontal_fusion": False, "dump_dir": "/tmp/x"})
    assert opts == SplitLinearOptions("eager", True, "/tmp/x", False, 3)
    assert SplitLinearOptions.from_dict(opts) is opts


def test_unknown_key_lists_valid_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['fallbak'\].*fallback.*strict.*dump_dir"):
        SplitLinearOptions.from_dict({"fallbak": "eager"})


@pytest.mark.parametrize(
    "key, value",
    [("fallback", "tvm"), ("fallback", 1), ("strict", 1), ("strict", "yes"), ("horizontal_fusion", None),
     ("min_parts", 1.5), ("min_parts", True), ("min_parts", 0), ("dump_dir", 3)],
)
def test_wrong_type_names_the_key(key: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"option '{key}'"):
        SplitLinearOptions.from_dict({key: value})


def test_options_not_a_mapping() -> None:
    with pytest.raises(ValueError, match="'options' must be a dict"):
        SplitLinearOptions.from_dict([("strict", True)])  # type: ignore[arg-type]


def test_dump_dir_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPLITLINEAR_DUMP_DIR", "/tmp/from-env")
    assert SplitLinearOptions().resolved_dump_dir() == "/tmp/from-env"
    assert SplitLinearOptions(dump_dir="/tmp/opt").resolved_dump_dir() == "/tmp/opt"
    monkeypatch.delenv("SPLITLINEAR_DUMP_DIR")
    assert SplitLinearOptions().resolved_dump_dir() is None


def test_invalid_options_through_torch_compile() -> None:
    """Dynamo wraps backend errors; the ValueError is the cause."""
    model = CatLinear(8, [4, 4])
    compiled = torch.compile(model, backend="splitlinear", options={"nope": 1})
    with pytest.raises(RuntimeError, match=r"ValueError: splitlinear: unknown option\(s\) \['nope'\]") as info:
        compiled(randn(2, 8))
    assert isinstance(getattr(info.value, "inner_exception", None), ValueError)


def test_mode_is_accepted_and_logged(op: object, caplog: pytest.LogCaptureFixture) -> None:
    model = CatLinear(8, [4, 4])
    x = randn(2, 8)
    with caplog.at_level(logging.INFO, logger="splitlinear"):
        compiled = torch.compile(model, backend="splitlinear", mode="max-autotune")
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert any("mode='max-autotune' is ignored" in r.getMessage() for r in caplog.records)
