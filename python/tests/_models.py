"""Small models with split weights, as they appear in practice."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F


class CatLinear(nn.Module):
    """TransformerEngine ``parameters_split`` style: separate Parameters, one ``F.linear`` over their cat.

    ``weight_<i>`` ``[rows[i], K]`` and (with ``bias``) ``bias_<i>`` ``[rows[i]]``; the
    forward is ``F.linear(x, torch.cat(weights), torch.cat(biases))``.
    """

    def __init__(self, in_features: int, rows: Sequence[int], bias: bool = True,
                 dtype: torch.dtype = torch.float32, device: str = "cpu") -> None:
        super().__init__()
        self.rows = list(rows)
        scale = in_features ** -0.5
        for i, n in enumerate(rows):
            w = torch.randn(n, in_features, dtype=torch.float64) * scale
            self.register_parameter(f"weight_{i}", nn.Parameter(w.to(dtype=dtype, device=device)))
            if bias:
                b = torch.randn(n, dtype=torch.float64) * 0.5
                self.register_parameter(f"bias_{i}", nn.Parameter(b.to(dtype=dtype, device=device)))
        self.has_bias = bias

    def weights(self) -> list[torch.Tensor]:
        return [getattr(self, f"weight_{i}") for i in range(len(self.rows))]

    def biases(self) -> list[torch.Tensor]:
        return [getattr(self, f"bias_{i}") for i in range(len(self.rows))]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bias = torch.cat(self.biases()) if self.has_bias else None
        return F.linear(x, torch.cat(self.weights()), bias)


class CatLinearTanh(CatLinear):
    """:class:`CatLinear` followed by ``tanh``: the rewritten graph keeps an op besides the split
    linear, so ``fallback="inductor"`` compiles it with Inductor (a graph of op calls alone runs
    eagerly: ``splitlinear.fx.residue``)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x).tanh()


class SiblingQKV(nn.Module):
    """Sibling projections reading one input: ``q_proj``, ``k_proj``, ``v_proj`` (Llama/Qwen style)."""

    def __init__(self, hidden: int, q: int, kv: int, bias: bool,
                 dtype: torch.dtype = torch.float32, device: str = "cpu") -> None:
        super().__init__()
        self.q_proj = nn.Linear(hidden, q, bias=bias, dtype=dtype, device=device)
        self.k_proj = nn.Linear(hidden, kv, bias=bias, dtype=dtype, device=device)
        self.v_proj = nn.Linear(hidden, kv, bias=bias, dtype=dtype, device=device)
        with torch.no_grad():  # never zero, O(1) outputs
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, dtype=torch.float64).to(dtype) * hidden ** -0.5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.q_proj(x), self.k_proj(x), self.v_proj(x)


class TwoLayer(nn.Module):
    """A fused-QKV-style layer (explicit cat) followed by a gate/up MLP (siblings) and a down projection."""

    def __init__(self, hidden: int = 16, inner: int = 24) -> None:
        super().__init__()
        self.qkv = CatLinear(hidden, [hidden, hidden // 2, hidden // 2], bias=True)
        self.mix = nn.Linear(2 * hidden, hidden)
        self.gate = nn.Linear(hidden, inner, bias=False)
        self.up = nn.Linear(hidden, inner, bias=False)
        self.down = nn.Linear(inner, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.mix(self.qkv(x)))
        return self.down(F.silu(self.gate(h)) * self.up(h))
