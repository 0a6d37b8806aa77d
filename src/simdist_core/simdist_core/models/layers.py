"""Small building blocks shared by the world model's parts.

Everything here is plain PyTorch. ``CrossAttentionBlock`` and ``DecoderBlock`` are written out
instead of using ``nn.TransformerDecoderLayer`` so the planner can attend N candidate query
sets to ONE shared context without copying it N times (see ``Attention.forward``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn


def mlp(in_dim: int, hidden: int | tuple[int, ...], out_dim: int, *, layernorm: bool = True) -> nn.Sequential:
    """Build ``Linear -> [LayerNorm] -> SiLU`` blocks followed by a plain output ``Linear``.

    SiLU rather than TD-MPC2's Mish: same shape, but Mish is ~9x slower on this CPU (1.17 vs 0.13 ms
    for a (48, 25, 256) tensor), and the MLP dynamics runs it H times per rollout.

    Args:
        in_dim: input width.
        hidden: width of each hidden layer (an int means one hidden layer).
        out_dim: output width.
        layernorm: put a LayerNorm before each activation (TD-MPC2 style, keeps training stable).

    Returns:
        The network as an ``nn.Sequential``.
    """
    widths = (hidden,) if isinstance(hidden, int) else tuple(hidden)
    layers: list[nn.Module] = []
    prev = in_dim
    for width in widths:
        layers.append(nn.Linear(prev, width))
        if layernorm:
            layers.append(nn.LayerNorm(width))
        layers.append(nn.SiLU())
        prev = width
    layers.append(nn.Linear(prev, out_dim))
    return nn.Sequential(*layers)


class SimNorm(nn.Module):
    """Simplicial normalisation: softmax over groups of ``group`` latent components (TD-MPC2).

    Keeps latents bounded so the consistency loss cannot be lowered by shrinking or blowing up
    the latent scale.
    """

    def __init__(self, group: int) -> None:
        super().__init__()
        self.group = group

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Normalise ``x`` of shape (..., D) with D divisible by ``group``."""
        shape = x.shape
        x = x.reshape(*shape[:-1], shape[-1] // self.group, self.group)  # (..., D/g, g)
        # Written out: F.softmax over a last axis of 8 is ~5x slower on CPU (1.38 vs 0.27 ms, 77k values).
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return (e / e.sum(dim=-1, keepdim=True)).reshape(shape)


class Attention(nn.Module):
    """Multi-head attention whose keys/values may be shared by every query batch.

    If ``context`` has batch 1 and ``queries`` batch N > 1, the N query sets are folded into one
    long query sequence, so the context's keys and values are projected once instead of N times.
    This is exact because attention without a mask treats each query row independently.
    """

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        if width % heads:
            raise ValueError(f"width must be divisible by heads, got width={width}, heads={heads}")
        self.heads = heads
        self.q = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * width)
        self.out = nn.Linear(width, width)

    def forward(self, queries: torch.Tensor, context: torch.Tensor, causal: bool = False) -> torch.Tensor:
        """Attend ``queries`` (N, L, W) to ``context`` (N or 1, S, W); returns (N, L, W)."""
        n, length, width = queries.shape
        shared = context.shape[0] == 1 and n > 1 and not causal
        if shared:
            queries = queries.reshape(1, n * length, width)  # (1, N*L, W): one long query sequence
        elif context.shape[0] != n:
            context = context.expand(n, -1, -1)
        e = width // self.heads
        q = self.q(queries).unflatten(-1, (self.heads, e)).transpose(1, 2)  # (b, h, L', e)
        k, v = self.kv(context).unflatten(-1, (2, self.heads, e)).permute(2, 0, 3, 1, 4)  # 2 x (b, h, S, e)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # (b, h, L', e)
        y = self.out(y.transpose(1, 2).reshape(q.shape[0], -1, width))
        return y.reshape(n, length, width)


class CrossAttentionBlock(nn.Module):
    """Pre-norm ``x + CrossAttn(x, context)`` then ``x + FFN(x)``; no self-attention between queries."""

    def __init__(self, width: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.norm_q = nn.LayerNorm(width)
        self.norm_c = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.norm_f = nn.LayerNorm(width)
        self.ffn = nn.Sequential(nn.Linear(width, ffn), nn.GELU(), nn.Linear(ffn, width))

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """``x`` (N, L, W), ``context`` (N or 1, S, W) -> (N, L, W)."""
        x = x + self.attn(self.norm_q(x), self.norm_c(context))
        return x + self.ffn(self.norm_f(x))


class DecoderBlock(nn.Module):
    """Pre-norm transformer decoder layer: causal self-attention, cross-attention, FFN."""

    def __init__(self, width: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.norm_s = nn.LayerNorm(width)
        self.self_attn = Attention(width, heads)
        self.cross = CrossAttentionBlock(width, heads, ffn)

    def forward(self, x: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        """``x`` (N, L, W), ``context`` (N or 1, S, W) -> (N, L, W); query k sees queries 0..k only."""
        h = self.norm_s(x)
        x = x + self.self_attn(h, h, causal=True)
        return self.cross(x, context)
