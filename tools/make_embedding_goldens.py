"""Embedding goldens of the tiny models of testdata/models, from HuggingFace
transformers (float32, eager attention).

    python tools/make_embedding_goldens.py testdata   (after tools/make_goldens.py; tools/requirements.txt)

For each safetensors folder (qwen2-tiny, llama-tiny) and each prompt of
tools/make_goldens.py's PROMPTS it writes <name>.embed.golden.json with:
  hidden  (positions, hidden) the last entry of output_hidden_states, which
          the script checks is the output of the final norm (model.model.norm,
          caught by a forward hook) bit for bit: the state the lm_head multiplies
  last    the last position's hidden state, L2-normalised
  mean    the mean over every position, L2-normalised (sentence-transformers'
          Pooling(pooling_mode_mean_tokens) then Normalize, written out in torch:
          sum(h * mask) / sum(mask), then torch.nn.functional.normalize(p=2))
  last_raw, mean_raw  the same before normalisation
Floats are float32 values in their shortest round-trip form. Torch runs on
one thread, so a re-run with the pinned versions rewrites the same bytes.
"""
import importlib.metadata as md
import json, os, platform, sys, warnings

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM
from transformers.utils import logging as hf_logging

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_goldens import PROMPTS, f32  # the logits goldens' prompts and float format

hf_logging.set_verbosity_error()
hf_logging.disable_progress_bar()
warnings.filterwarnings("ignore")
torch.set_num_threads(1)

OUT = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "testdata", "models")
VERSIONS = {"python": platform.python_version(),
            **{p: md.version(p) for p in ["torch", "transformers", "safetensors", "numpy"]}}


@torch.no_grad()
def goldens(name):
    m = AutoModelForCausalLM.from_pretrained(os.path.join(OUT, name), dtype=torch.float32,
                                             attn_implementation="eager").eval()
    caught = []
    hook = m.model.norm.register_forward_hook(lambda mod, inp, out: caught.append(out.detach().clone()))
    out = {"model": name, "source": "hf", "dtype": "F32", "versions": VERSIONS,
           "notes": "hidden = output_hidden_states[-1], checked equal to the final norm's output; "
                    "pooling and normalisation as sentence-transformers' Pooling and Normalize, in torch",
           "hidden_size": m.config.hidden_size, "prompts": []}
    for prompt in PROMPTS:
        caught.clear()
        res = m(torch.tensor([prompt]), output_hidden_states=True)
        hs = res.hidden_states
        assert len(hs) == m.config.num_hidden_layers + 1, len(hs)
        h = hs[-1][0].float()  # (positions, hidden)
        assert len(caught) == 1 and torch.equal(caught[0][0], h), f"{name}: hidden_states[-1] is not the final norm's output"
        # and it is what the lm_head multiplies: the logits follow from it
        assert torch.allclose(m.lm_head(h), res.logits[0], rtol=0, atol=1e-5)
        mask = torch.ones(h.shape[0], 1)
        last = h[-1]
        mean = (h * mask).sum(0) / mask.sum()
        out["prompts"].append({"tokens": prompt, "hidden": f32(h),
                               "last": f32(F.normalize(last, p=2, dim=0)), "mean": f32(F.normalize(mean, p=2, dim=0)),
                               "last_raw": f32(last), "mean_raw": f32(mean)})
    hook.remove()
    path = os.path.join(OUT, name + ".embed.golden.json")
    with open(path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path)


def main():
    for name in ["qwen2-tiny", "llama-tiny"]:
        goldens(name)


if __name__ == "__main__":
    main()
