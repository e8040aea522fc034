"""Makes the random LoRA adapters of testdata/lora for the tiny models of
testdata/models, and their goldens from transformers + peft (float32, eager).

    python tools/make_lora_goldens.py testdata      (after make_goldens.py; tools/requirements.txt and peft)

Adapters (PEFT folders: adapter_config.json, adapter_model.safetensors):
  <model>-lora-a   r 4, lora_alpha 8, all seven linear modules
                   (q_proj k_proj v_proj o_proj gate_proj up_proj down_proj)
  <model>-lora-b   r 8, lora_alpha 4, use_rslora (scale alpha/sqrt(r)),
                   q_proj v_proj down_proj only
for model in qwen2-tiny, llama-tiny. PEFT initialises lora_B to zero (the
adapter would change nothing), so every lora_A and lora_B is set to seeded
random values, rounded to float16 (so that a float16 GGUF of them is exact).

GGUF copies, written by llama.cpp's own convert_lora_to_gguf.py (path in
$LLAMA_CPP, default the extracted llama.cpp of tools/build-llama-bench.sh;
the script says so and writes none when it is missing):
  <model>-lora-a-F32.gguf, <model>-lora-a-F16.gguf
(lora-b is rsLoRA, which llama.cpp's converter and runtime ignore: their
scale is alpha/r, so a GGUF of it would not be the same adapter.)

Goldens (<name>.golden.json, the schema of testdata/models goldens): for the
4 prompts of make_goldens.py, the logits at every prompt position and 32
greedy steps with top-5 log-probabilities and margins, of
  <model>-lora-a, <model>-lora-b           the safetensors model + the adapter
  llama-tiny-Q4_0-lora-a                   llama-tiny-Q4_0.gguf (transformers'
                                           GGUF loader, as make_goldens.py)
                                           + lora-a: the adapter over a
                                           quantised base
"""
import importlib.metadata as md
import json, os, platform, subprocess, sys

import numpy as np
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import AutoConfig, AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_goldens as mg  # noqa: E402  (PROMPTS, STEPS, f32, reference_from_gguf)

ROOT = sys.argv[1] if len(sys.argv) > 1 else "testdata"
MODELS = os.path.join(ROOT, "models")
OUT = os.path.join(ROOT, "lora")
VERSIONS = {"python": platform.python_version(),
            **{p: md.version(p) for p in ["torch", "transformers", "peft", "gguf", "safetensors", "numpy"]}}
LLAMA_CPP = os.environ.get("LLAMA_CPP", os.path.expanduser(
    "~/.cache/vkllm/llama.cpp-vulkan-0.3.36/work/llama_cpp_python-0.3.36/vendor/llama.cpp"))
ALL = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
ADAPTERS = {
    "lora-a": dict(r=4, lora_alpha=8, target_modules=ALL, seed=11),
    "lora-b": dict(r=8, lora_alpha=4, target_modules=["q_proj", "v_proj", "down_proj"], use_rslora=True, seed=12),
}


def base_model(name):
    return AutoModelForCausalLM.from_pretrained(os.path.join(MODELS, name), dtype=torch.float32,
                                                attn_implementation="eager").eval()


def make_adapter(model, spec, seed):
    cfg = LoraConfig(r=spec["r"], lora_alpha=spec["lora_alpha"], target_modules=spec["target_modules"],
                     use_rslora=spec.get("use_rslora", False), lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
    pm = get_peft_model(model, cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(pm.named_parameters()):
            if "lora_A" in name or "lora_B" in name:
                p.copy_((0.15 * torch.randn(p.shape, generator=g)).half().float())
    assert any(bool((m.lora_B["default"].weight != 0).any()) for m in pm.modules() if hasattr(m, "lora_B"))
    return pm.eval()


@torch.no_grad()
def goldens(model, name, source, notes):
    out = {"model": name, "source": source, "dtype": "F32", "versions": VERSIONS, "notes": notes,
           "vocab_size": model.config.vocab_size, "prompts": []}
    for prompt in mg.PROMPTS:
        logits = model(torch.tensor([prompt])).logits[0].float()
        rec = {"tokens": prompt, "logits": mg.f32(logits), "greedy": [], "top5": [], "margin": []}
        seq = list(prompt)
        for _ in range(mg.STEPS):
            last = model(torch.tensor([seq])).logits[0, -1].float()
            lp = torch.log_softmax(last, -1)
            top = torch.topk(last, 5)
            nxt = int(torch.argmax(last))
            rec["greedy"].append(nxt)
            rec["top5"].append([{"id": int(i), "logprob": mg.f32(lp[i:i + 1])[0]} for i in top.indices])
            rec["margin"].append(mg.f32((top.values[0] - top.values[1]).reshape(1))[0])
            seq.append(nxt)
        out["prompts"].append(rec)
    with open(os.path.join(OUT, name + ".golden.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")


def to_gguf(model_name, adapter_dir, outtype):
    script = os.path.join(LLAMA_CPP, "convert_lora_to_gguf.py")
    if not os.path.exists(script):
        print(f"no {script}: GGUF adapters not written")
        return
    out = f"{adapter_dir}-{outtype.upper()}.gguf"
    subprocess.run([sys.executable, script, "--base", os.path.join(MODELS, model_name), "--outtype", outtype,
                    "--outfile", out, adapter_dir], check=True, capture_output=True)
    print("wrote", out)


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    for model_name in ["qwen2-tiny", "llama-tiny"]:
        for suffix, spec in ADAPTERS.items():
            name = f"{model_name}-{suffix}"
            pm = make_adapter(base_model(model_name), spec, spec["seed"])
            d = os.path.join(OUT, name)
            pm.save_pretrained(d)
            # A re-read adapter must be the one the goldens come from.
            again = PeftModel.from_pretrained(base_model(model_name), d).eval()
            ids = torch.tensor([mg.PROMPTS[1]])
            assert torch.equal(again(ids).logits, pm(ids).logits)
            base = base_model(model_name)(ids).logits
            diff = (pm(ids).logits - base).abs().max().item()
            assert diff > 0.05, f"{name} changes the logits by only {diff}"
            print(f"{name}: the adapter changes logits by up to {diff:.3f}")
            goldens(pm, name, "hf+peft", f"reference: transformers on testdata/models/{model_name} with peft "
                                         f"PeftModel ({spec}), not merged")
            if suffix == "lora-a":
                to_gguf(model_name, d, "f32")
                to_gguf(model_name, d, "f16")
    # The adapter over a quantised base: transformers' GGUF loader (the
    # dequantised weights, checked as make_goldens.py does) + the adapter.
    gname = "llama-tiny-Q4_0"
    ref, notes, _ = mg.reference_from_gguf(AutoConfig.from_pretrained(os.path.join(MODELS, "llama-tiny")),
                                           os.path.join(MODELS, gname + ".gguf"), "llama")
    pm = PeftModel.from_pretrained(ref, os.path.join(OUT, "llama-tiny-lora-a")).eval()
    goldens(pm, gname + "-lora-a", "gguf+peft", notes + "; with peft PeftModel of llama-tiny-lora-a, not merged")
    print("done")


if __name__ == "__main__":
    main()
