"""Writes a dequantised HF safetensors folder (float32) from a GGUF file with
transformers' own GGUF loader, tokenizer included.

    python tools/gguf_to_hf.py MODEL.gguf OUT_DIR      (make real-model-safetensors)
"""
import os, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf_path, out = sys.argv[1], sys.argv[2]
d, f = os.path.dirname(os.path.abspath(gguf_path)), os.path.basename(gguf_path)
tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
loaded = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
# A model loaded from GGUF is marked quantized and refuses save_pretrained;
# its weights are already dequantised, so copy them into a plain model.
config = loaded.config
if hasattr(config, "quantization_config"):
    del config.quantization_config
model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
model.load_state_dict(loaded.state_dict())
model.save_pretrained(out, safe_serialization=True)
tok.save_pretrained(out)
print("wrote", out)
