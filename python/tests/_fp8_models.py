"""A small transformer-like block for the ``fp8`` backend option, with its own eager FP8 reference.

``Block.forward(x)`` is plain PyTorch (what the backend sees). ``Block.reference(x, recipe)``
computes what the rewrite must give: ``splitlinear.ops.fp8_linear`` called eagerly on the same
groups the backend fuses (q/k/v, gate/up, each lone linear one part) and plain ``F.linear`` for
what the default filter skips (``lm_head``) or the op cannot take (``odd``: 24 rows).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

D, H, KV = 64, 128, 32


class Block(nn.Module):
    """Sizes: model width ``d``, k/v rows ``kv``, MLP width ``h``, ``odd``'s rows."""

    def __init__(self, bias: bool = False, d: int = D, kv: int = KV, h: int = H, odd: int = 24) -> None:
        super().__init__()
        self.h = h
        self.norm = nn.RMSNorm(d)
        self.q_proj = nn.Linear(d, d, bias=bias)
        self.k_proj = nn.Linear(d, kv, bias=bias)
        self.v_proj = nn.Linear(d, kv, bias=bias)
        self.o_proj = nn.Linear(d + 2 * kv, d, bias=True)
        self.gate_proj = nn.Linear(d, h, bias=False)
        self.up_proj = nn.Linear(d, h, bias=False)
        self.down_proj = nn.Linear(h, d, bias=False)
        self.lm_head = nn.Linear(d, 96, bias=False)
        self.odd = nn.Linear(d, odd, bias=False)

    def _groups(self, h: Tensor, fp8_linear) -> tuple[Tensor, Tensor]:  # noqa: ANN001
        qkv = fp8_linear(h, [self.q_proj, self.k_proj, self.v_proj])
        a = fp8_linear(qkv, [self.o_proj])
        h = h + a
        gate_up = fp8_linear(self.norm(h), [self.gate_proj, self.up_proj])
        gate, up = gate_up.split([self.h, self.h], -1)
        h = h + fp8_linear(F.silu(gate) * up, [self.down_proj])
        return F.linear(h, self.lm_head.weight), F.linear(h, self.odd.weight)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = self.norm(x)
        qkv = torch.cat([self.q_proj(h), self.k_proj(h), self.v_proj(h)], -1)
        h = h + self.o_proj(qkv)
        g = self.norm(h)
        h = h + self.down_proj(F.silu(self.gate_proj(g)) * self.up_proj(g))
        return self.lm_head(h), self.odd(h)

    def reference(self, x: Tensor, recipe: str) -> tuple[Tensor, Tensor]:
        """Eager FP8 with the backend's grouping (one ``fp8_linear`` per group)."""
        from splitlinear import ops

        def fp8_linear(inp: Tensor, mods: list[nn.Linear]) -> Tensor:
            bias = None if mods[0].bias is None else [m.bias for m in mods]
            return ops.fp8_linear(inp, [m.weight for m in mods], bias, recipe=recipe)

        return self._groups(self.norm(x), fp8_linear)


#: FP8 regions the backend makes of one Block: q/k/v, o, gate/up, down.
FP8_REGIONS = 4
