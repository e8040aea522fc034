"""Goldens for the real demo model (SmolLM2-135M-Instruct, Q4_1 GGUF, and the
float32 safetensors folder tools/gguf_to_hf.py makes from it):

  llamacpp: 32 greedy tokens from llama.cpp (llama-cpp-python, see
            tools/requirements-peer.txt) on the Q4_1 GGUF
  hf:       32 greedy tokens, top-5 log-probabilities and top-2 margins from
            transformers on the dequantised safetensors folder

    python tools/real_model_goldens.py ~/.cache/vkllm/smollm2 testdata/real/smollm2.golden.json [hf|llamacpp ...]

The prompt is "What is the capital of France?" through the model's chat
template (add_generation_prompt), tokenized by the HF tokenizer; its ids are
recorded and used by every side.
"""
import json, os, sys
import numpy as np

model_dir, out = os.path.expanduser(sys.argv[1]), sys.argv[2]
parts = sys.argv[3:] or ["hf", "llamacpp"]
gguf_path = os.path.join(model_dir, "SmolLM2-135M-Instruct.Q4_1.gguf")
hf_dir = os.path.join(model_dir, "hf")
STEPS = 32
golden = json.load(open(out)) if os.path.exists(out) else {"model": "SmolLM2-135M-Instruct", "versions": {}}

if "hf" in parts:
    import torch, transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(hf_dir)
    ids = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                  add_generation_prompt=True, tokenize=True)
    if hasattr(ids, "keys"):
        ids = ids["input_ids"]
    ids = [int(i) for i in ids]
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32, attn_implementation="eager").eval()
    seq, rec = list(ids), {"greedy": [], "top5": [], "margin": []}
    with torch.no_grad():
        for _ in range(STEPS):
            last = model(torch.tensor([seq])).logits[0, -1].float()
            lp = torch.log_softmax(last, -1)
            top = torch.topk(last, 5)
            nxt = int(torch.argmax(last))
            rec["greedy"].append(nxt)
            rec["top5"].append([{"id": int(i), "logprob": float(lp[i])} for i in top.indices])
            rec["margin"].append(float(top.values[0] - top.values[1]))
            seq.append(nxt)
    golden["prompt_tokens"] = ids
    golden["hf"] = rec
    golden["versions"].update({"torch": torch.__version__, "transformers": transformers.__version__})

if "llamacpp" in parts:
    import llama_cpp
    ids = golden["prompt_tokens"]
    llm = llama_cpp.Llama(model_path=gguf_path, n_ctx=256, n_threads=2, n_batch=256, verbose=False, logits_all=False)
    llm.eval(ids)
    out_ids = []
    for _ in range(STEPS):
        logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        nxt = int(np.argmax(logits))
        out_ids.append(nxt)
        llm.eval([nxt])
    golden["llamacpp"] = {"greedy": out_ids}
    golden["versions"]["llama_cpp_python"] = llama_cpp.__version__

with open(out, "w") as f:
    json.dump(golden, f, indent=1)
print("wrote", out)
