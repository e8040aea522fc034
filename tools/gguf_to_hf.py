"""Writes a dequantised HF safetensors folder from a GGUF file with
transformers' own GGUF loader: model.safetensors in float32 (not bf16: the
dequantised Q4_1/Q8_0 values are kept exactly), config.json,
generation_config.json, tokenizer.json, tokenizer_config.json and
chat_template.jinja.

    python tools/gguf_to_hf.py MODEL.gguf OUT_DIR      (make real-model-safetensors)

Quirks of transformers' GGUF loader (5.23.0) that this relies on or guards:
  - it dequantises with gguf-py and undoes llama.cpp's Q/K row permutation;
  - config values come from GGUF metadata, so rms_norm_eps is the float32
    value stored there (9.999999747378752e-06, not 1e-05);
  - it does not map RoPE scaling (rope.scaling.* keys or a rope_freqs
    tensor): such a file is refused here rather than silently changed;
  - a model loaded from GGUF is marked quantized and refuses
    save_pretrained, so its (already dequantised) weights are copied into a
    plain model first.
Re-running on the same file writes the same bytes.
"""
import os, sys

import gguf
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf_path, out = sys.argv[1], sys.argv[2]
r = gguf.GGUFReader(gguf_path)
scaled = [k for k in r.fields if ".rope.scaling." in k] + [t.name for t in r.tensors if t.name == "rope_freqs.weight"]
if scaled:
    sys.exit(f"{gguf_path}: has RoPE scaling ({', '.join(scaled)}), which transformers' GGUF loader drops")
d, f = os.path.dirname(os.path.abspath(gguf_path)), os.path.basename(gguf_path)
tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
loaded = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
config = loaded.config
if hasattr(config, "quantization_config"):
    del config.quantization_config
model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
model.load_state_dict(loaded.state_dict())  # strict: every weight present
model.save_pretrained(out)
tok.save_pretrained(out)
print("wrote", out)
