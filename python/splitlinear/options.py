"""Options of the ``splitlinear`` torch.compile backend.

``torch.compile(model, backend="splitlinear", options={...})`` hands the dict to
the backend as the keyword ``options``; :meth:`SplitLinearOptions.from_dict`
validates it.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union, get_args

import torch

from ._dtypes import FP8_BLOCKWISE_RECIPES, FP8_RECIPES, Fp8Recipe

Fallback = Literal["inductor", "eager"]

#: Where FP8 serving linears quantize their activations (option ``fp8_activation_quant``).
Fp8ActivationQuant = Literal["op", "graph"]

#: How errors name the backend option ``fp8_filter``.
FP8_FILTER_OPTION = "splitlinear: option 'fp8_filter'"

#: What option ``fp8_filter`` takes: a predicate on a linear's fully qualified
#: module name (True: run it in FP8), or FQN patterns (``fnmatch``) to skip.
Fp8Filter = Union[Callable[[str], bool], Sequence[str]]

#: The FQN patterns ``fp8_filter=None`` skips: the output projection.
DEFAULT_FP8_SKIP: tuple[str, ...] = ("lm_head", "*.lm_head")


def check_fp8_filter(flt: object, where: str) -> None:
    """Checks an ``fp8_filter`` value (None, a callable, or a sequence of ``fnmatch`` patterns).

    Args:
        flt: the value given.
        where: how errors name it, e.g. ``"splitlinear: option 'fp8_filter'"``.

    Raises:
        ValueError: anything else, a lone ``str`` included (it would be read as one pattern
            per character, which matches nothing).
    """
    if flt is None or callable(flt):
        return
    if isinstance(flt, str) or not isinstance(flt, Sequence) or not all(isinstance(p, str) for p in flt):
        raise ValueError(
            f"{where} must be a callable fn(fqn) -> bool or a list of "
            f"fnmatch patterns of module FQNs to skip, got {type(flt).__name__} {flt!r}"
        )


def fp8_filter_allows(flt: Fp8Filter | None, fqn: str, where: str) -> bool:
    """Whether ``fp8_filter`` value ``flt`` (checked by :func:`check_fp8_filter`) lets the linear
    with module FQN ``fqn`` run in FP8: a callable's answer; else True unless a pattern
    (:data:`DEFAULT_FP8_SKIP` for None) matches.

    Raises:
        ValueError: the callable raised or returned something other than a ``bool``; names
            ``where`` and the module.
    """
    if callable(flt):
        try:
            keep = flt(fqn)
        except Exception as exc:  # the user's callable: say which option and module it failed on
            raise ValueError(f"{where} raised {type(exc).__name__} on module {fqn!r}: {exc}") from exc
        # Only a bool: a filter that forgot its `return` answers None, which would
        # silently keep every linear in bf16.
        if not isinstance(keep, bool):
            raise ValueError(f"{where} must return True or False, got {type(keep).__name__} "
                             f"{keep!r} on module {fqn!r}")
        return keep
    patterns = DEFAULT_FP8_SKIP if flt is None else flt
    return not any(fnmatch.fnmatchcase(fqn, p) for p in patterns)


#: Environment variable naming a directory for FX graph dumps (see ``dump_dir``).
DUMP_DIR_ENV = "SPLITLINEAR_DUMP_DIR"


@dataclasses.dataclass(frozen=True)
class SplitLinearOptions:
    """Settings of one ``torch.compile(..., backend="splitlinear")`` call.

    Attributes:
        fallback: what compiles the rewritten graph: ``"inductor"`` (the
            ``inductor`` backend, the split-linear regions becoming extern
            kernel calls of ``torch.ops.splitlinear.linear``) or ``"eager"``
            (the rewritten ``GraphModule`` runs as is).
        strict: raise ``RuntimeError`` naming the node when a candidate region
            (a concatenated weight/bias feeding a linear, or sibling linears
            reading one input) cannot be replaced, instead of leaving it to
            the fallback.
        dump_dir: directory receiving ``graph_<n>_before.txt`` and
            ``graph_<n>_after.txt`` for every compiled graph.  ``None`` reads
            the environment variable ``SPLITLINEAR_DUMP_DIR`` (unset: no dumps).
        horizontal_fusion: fuse two or more linears reading the same input
            (q/k/v, gate/up) into one call.
        min_parts: smallest number of weight parts a region must have to be
            replaced (a one-part ``torch.cat`` is left alone by default).
        mode: ``torch.compile``'s ``mode`` (``"default"``, ``"reduce-overhead"``,
            ``"max-autotune"``, ``"max-autotune-no-cudagraphs"``, ...; the keys of
            ``torch._inductor.list_mode_options()``). ``torch.compile(...,
            mode=...)`` sets it (``torch.compile`` takes ``mode`` or
            ``options``, not both, so to combine a mode with other options put
            it here). With ``fallback="inductor"`` Inductor gets the
            configuration ``backend="inductor"`` would get for this mode; with
            ``fallback="eager"`` a mode that turns on CUDA graphs
            (``"reduce-overhead"``, ``"max-autotune"``) replays the eager graph
            through cudagraph trees (:mod:`splitlinear.cudagraphs`), and the
            autotuning part of a mode has nothing to tune.
        inductor_options: Inductor config patches, as ``torch.compile(...,
            backend="inductor", options=...)`` takes them (e.g.
            ``{"triton.cudagraphs": True}``), applied after ``mode``; only with
            ``fallback="inductor"``.
        fp8: run every eligible linear of the graph in FP8 through
            ``splitlinear.ops.fp8_linear`` with this recipe: ``"tensorwise"``,
            ``"rowwise"`` or ``"rowwise_with_gw_hp"`` (torchao's names and
            meanings), ``"blockwise"`` or ``"blockwise_fp32_scales"``
            (TransformerEngine's ``Float8BlockScaling``: 1x128 activation and
            gradient blocks, 128x128 weight blocks; sm_90 GPUs and the CPU
            only; a group whose K or part rows are not multiples of 128 stays
            in its precision, named in one warning). Sibling linears share one
            activation cast and one GEMM; a lone linear is one part. ``None``
            (the default): no FP8.
        fp8_filter: which linears run in FP8 (only with ``fp8``). ``None``:
            all but those whose module FQN matches :data:`DEFAULT_FP8_SKIP`
            (``lm_head``); a sequence of ``fnmatch`` patterns: the FQNs to skip
            (replacing the default); a callable ``fn(fqn) -> bool``: True to run
            the linear in FP8 (torchao's ``module_filter_fn``, given the FQN
            only). Either way a linear whose K or output rows are not multiples
            of 16 (what the FP8 GEMM needs) stays in its own precision.
        fp8_weight_cache: with ``fp8``, ``True`` quantizes each weight group
            at most twice while its parts do not change (``W8`` in the first
            forward, ``W8`` and ``W8ᵀ`` in the first backward;
            ``fp8_linear(cache_weights=True)``: across gradient-accumulation
            micro-batches and no_grad forwards, until the optimizer step or
            any other in-place change bumps a part's version counter, or its
            storage changes), keeping
            an FP8 copy of every weight group (half their bfloat16 bytes, the
            transposed copy as much again in training) until the optimizer
            step. ``False`` (default, as torchao; TransformerEngine's weight
            caching is opt-in too) keeps no FP8 weight between the forward
            and the backward: the backward casts the transposed copy again
            from the parts. The cache gains nothing when each weight version
            is read by one forward (one micro-batch per step; FSDP2, whose
            all-gathers make new versions every forward) and would hold FP8
            copies of every layer's (unsharded) weights through the backward.
            On the H200 training step of ``bench/model/train.py`` (2
            Llama-3-8B layers, one micro-batch) the default's peak was 832
            MiB lower (9136 MiB, torchao's 9141) and its step 0.5-0.9 ms (two
            runs) longer than the cache's, of 50 ms.
        fp8_activation_quant: where the activations of FP8 serving linears
            (:mod:`splitlinear.serving`) are quantized: ``"op"`` (default:
            inside ``fp8_serving_linear``, one quantization kernel per
            group) or ``"graph"`` (as ATen ops in the rewritten graph, so
            that the fallback compiler may fuse the amax and the cast into
            the ops that produce the input, such as an RMSNorm; the same
            bytes). The ``fp8`` training option quantizes inside its op
            either way.
    """

    fallback: Fallback = "inductor"
    strict: bool = False
    dump_dir: str | None = None
    horizontal_fusion: bool = True
    min_parts: int = 2
    mode: str | None = None
    inductor_options: Mapping[str, Any] | None = None
    fp8: Fp8Recipe | None = None
    fp8_filter: Fp8Filter | None = None
    fp8_weight_cache: bool = False
    fp8_activation_quant: Fp8ActivationQuant = "op"

    def __post_init__(self) -> None:
        if self.fp8_activation_quant not in get_args(Fp8ActivationQuant):
            raise ValueError(
                f"splitlinear: option 'fp8_activation_quant' must be one of "
                f"{list(get_args(Fp8ActivationQuant))}, got {self.fp8_activation_quant!r}"
            )
        if self.fallback not in get_args(Fallback):
            raise ValueError(
                f"splitlinear: option 'fallback' must be one of {list(get_args(Fallback))}, "
                f"got {self.fallback!r}"
            )
        for name in ("strict", "horizontal_fusion", "fp8_weight_cache"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ValueError(
                    f"splitlinear: option {name!r} must be a bool, got {type(value).__name__} {value!r}"
                )
        if self.dump_dir is not None and not isinstance(self.dump_dir, (str, os.PathLike)):
            raise ValueError(
                "splitlinear: option 'dump_dir' must be a str path or None, "
                f"got {type(self.dump_dir).__name__} {self.dump_dir!r}"
            )
        if isinstance(self.min_parts, bool) or not isinstance(self.min_parts, int):
            raise ValueError(
                f"splitlinear: option 'min_parts' must be an int, got "
                f"{type(self.min_parts).__name__} {self.min_parts!r}"
            )
        if self.min_parts < 1:
            raise ValueError(f"splitlinear: option 'min_parts' must be >= 1, got {self.min_parts}")
        if self.mode is not None:
            modes = list(_mode_table())
            if self.mode not in modes:
                raise ValueError(f"splitlinear: option 'mode' must be one of {modes}, got {self.mode!r}")
        if self.inductor_options is not None:
            if not isinstance(self.inductor_options, Mapping):
                raise ValueError(
                    "splitlinear: option 'inductor_options' must be a dict of Inductor config patches, "
                    f"got {type(self.inductor_options).__name__}"
                )
            if self.inductor_options and self.fallback != "inductor":
                raise ValueError(
                    "splitlinear: option 'inductor_options' configures Inductor and needs "
                    f"fallback='inductor', got fallback={self.fallback!r}"
                )
            try:  # Inductor's own checks: known keys, value types ('-' read as '_')
                self.inductor_config()
            except RuntimeError as exc:
                raise ValueError(f"splitlinear: option 'inductor_options': {exc}") from exc

        self._check_fp8()

    def _check_fp8(self) -> None:
        if self.fp8 is not None and self.fp8 not in FP8_RECIPES:
            raise ValueError(
                f"splitlinear: option 'fp8' must be one of {list(FP8_RECIPES)} or None, got {self.fp8!r}"
            )
        if self.fp8 is None and self.fp8_weight_cache:
            raise ValueError("splitlinear: option 'fp8_weight_cache' needs option 'fp8' (a recipe name)")
        if self.fp8 in FP8_BLOCKWISE_RECIPES and self.fp8_weight_cache:
            raise ValueError(f"splitlinear: option 'fp8_weight_cache' is not supported with fp8={self.fp8!r} "
                             "(the cache holds per-part tensorwise casts; the block-scaled recipe quantizes "
                             "the weight in 128x128 blocks every call)")
        flt = self.fp8_filter
        if flt is None:
            return
        if self.fp8 is None:
            raise ValueError("splitlinear: option 'fp8_filter' needs option 'fp8' (a recipe name)")
        check_fp8_filter(flt, FP8_FILTER_OPTION)

    def with_mode(self, mode: str | None) -> SplitLinearOptions:
        """These options with ``torch.compile``'s ``mode`` keyword applied.

        Raises:
            ValueError: ``mode`` is unknown, or differs from an ``options['mode']`` already set.
        """
        if mode is None or mode == self.mode or (mode == "default" and self.mode is not None):
            return self
        if self.mode is not None:
            raise ValueError(
                f"splitlinear: mode={mode!r} conflicts with options['mode']={self.mode!r}"
            )
        return dataclasses.replace(self, mode=mode)

    def inductor_config(self) -> dict[str, Any]:
        """The Inductor config patches for ``mode`` then ``inductor_options``, built (and checked)
        by the object ``torch.compile(backend="inductor", mode=..., options=...)`` uses.

        Raises:
            RuntimeError: an unknown Inductor option or a value of the wrong type (Inductor's message).
        """
        wrapper = torch._TorchCompileInductorWrapper(self.mode, dict(self.inductor_options or {}), None)
        return dict(wrapper.config)

    @property
    def cudagraphs(self) -> bool:
        """Whether the compiled graph replays through CUDA graphs (``triton.cudagraphs``)."""
        from torch._inductor import config

        return bool(self.inductor_config().get("triton.cudagraphs", config.triton.cudagraphs))

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of the valid option keys, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, options: Mapping[str, Any] | SplitLinearOptions | None) -> SplitLinearOptions:
        """Build options from the ``options=`` dict of ``torch.compile``.

        Args:
            options: ``None`` (all defaults), a mapping of option names to
                values, or an existing :class:`SplitLinearOptions` (returned as is).

        Raises:
            ValueError: an unknown key (the message lists the valid ones), or a
                value of the wrong type or out of range (the message names the key).
        """
        if options is None:
            return cls()
        if isinstance(options, SplitLinearOptions):
            return options
        if not isinstance(options, Mapping):
            raise ValueError(
                "splitlinear: 'options' must be a dict or SplitLinearOptions, "
                f"got {type(options).__name__}"
            )
        valid = cls.field_names()
        unknown = sorted(str(k) for k in options if k not in valid)
        if unknown:
            raise ValueError(
                f"splitlinear: unknown option(s) {unknown}; valid options are {valid}"
            )
        kwargs = dict(options)
        if isinstance(kwargs.get("dump_dir"), os.PathLike):
            kwargs["dump_dir"] = os.fspath(kwargs["dump_dir"])
        return cls(**kwargs)

    def resolved_dump_dir(self) -> str | None:
        """``dump_dir`` if set, else ``$SPLITLINEAR_DUMP_DIR`` if set and non-empty, else ``None``."""
        if self.dump_dir is not None:
            return os.fspath(self.dump_dir)
        env = os.environ.get(DUMP_DIR_ENV)
        return env or None


def _mode_table() -> dict[str, dict[str, Any]]:
    """Inductor's table of ``torch.compile`` modes (the one source of truth for their meaning)."""
    from torch._inductor import list_mode_options

    return list_mode_options()
