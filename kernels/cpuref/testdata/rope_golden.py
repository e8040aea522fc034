"""Writes rope.golden.json: transformers' float32 RoPE, for TestRoPEMatchesTransformers.

Re-run from the repository root:  /work/venv/bin/python kernels/cpu/testdata/rope_golden.py
Floats are stored as float32 bit patterns (int32) so JSON loses nothing.
"""
import json
import os
import sys

import torch
import transformers
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

torch.manual_seed(0)


def bits(t):
    return t.contiguous().view(torch.int32).flatten().tolist()


cases = []
for theta, dim in [(1e6, 64), (10000.0, 32), (500000.0, 128)]:
    scalings = [None, {"rope_type": "linear", "factor": 4.0}]
    for factor, lo, hi, old in [(8.0, 1.0, 4.0, 64), (32.0, 1.0, 4.0, 8192)]:
        scalings.append({"rope_type": "llama3", "factor": factor, "low_freq_factor": lo,
                         "high_freq_factor": hi, "original_max_position_embeddings": old})
    for sc in scalings:
        params = {"rope_type": "default", "rope_theta": theta} if sc is None else dict(sc, rope_theta=theta)
        cfg = LlamaConfig(hidden_size=dim * 2, num_attention_heads=2, head_dim=dim,
                          max_position_embeddings=131072, rope_parameters=params)
        rope = LlamaRotaryEmbedding(cfg)
        pos = torch.tensor([[0, 1, 7, 100, 3000, 32767, 131071]], dtype=torch.int64)
        q = torch.randn(1, 2, pos.shape[1], dim)  # (batch, heads, seq, head_dim)
        cos, sin = rope(q, pos)
        out, _ = apply_rotary_pos_emb(q, q, cos, sin)
        cases.append({
            "theta": theta, "head_dim": dim, "scaling": params,
            "inv_freq": bits(rope.inv_freq),
            "pos": pos[0].tolist(),
            "q": bits(q[0].transpose(0, 1)),  # (seq, heads*head_dim), the kernels' row layout
            "rotated": bits(out[0].transpose(0, 1)),
        })

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "rope.golden.json"), "w") as f:
    json.dump({"versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                            "python": sys.version.split()[0]},
               "cases": cases}, f, separators=(",", ":"))
