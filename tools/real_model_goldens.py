"""Goldens for the real demo model, SmolLM2-135M-Instruct: its Q4_1 GGUF
(`make real-model`) and the float32 safetensors folder that
tools/gguf_to_hf.py makes from it (`make real-model-safetensors`).

    python tools/real_model_goldens.py ~/.cache/vkllm/smollm2 testdata/real/smollm2.golden.json [hf] [llamacpp]

Two prompts, tokenized by the HF tokenizer of DIR/hf and given as ids to
both sides:
  chat   "What is the capital of France?" through the model's chat template
         (add_generation_prompt)
  count  "1, 2, 3, ..., 20," (no template): a continuation with wide margins,
         so that llama.cpp and transformers agree token for token
Per prompt and side, 32 steps by a manual argmax loop (no EOS stop): the
greedy tokens, the top-5 log-probabilities and the top-1 minus top-2 logit
margin of every step.
  hf:       transformers, float32, eager attention, on DIR/hf
  llamacpp: llama.cpp through llama-cpp-python (tools/requirements-peer.txt)
            on the Q4_1 GGUF, CPU, 2 threads, logits_all (with logits_all
            False llama-cpp-python 0.3.x leaves llm.scores unwritten)
With no side named both are made; a side not named keeps its old record.
Schema: testdata/README.md.
"""
import importlib.metadata as md
import json, os, platform, sys

import numpy as np

model_dir, out = os.path.expanduser(sys.argv[1]), sys.argv[2]
sides = sys.argv[3:] or ["hf", "llamacpp"]
gguf_path = os.path.join(model_dir, "SmolLM2-135M-Instruct.Q4_1.gguf")
hf_dir = os.path.join(model_dir, "hf")
STEPS = 32
CHAT = [{"role": "user", "content": "What is the capital of France?"}]
COUNT = ", ".join(str(i) for i in range(1, 21)) + ","

old = json.load(open(out)) if os.path.exists(out) else {}
golden = {"model": "SmolLM2-135M-Instruct", "versions": old.get("versions", {}), "notes": {}, "prompts": {}}
if isinstance(old.get("notes"), dict):
    golden["notes"].update(old["notes"])
golden["versions"]["python"] = platform.python_version()
golden["versions"]["numpy"] = md.version("numpy")


def f32(x):
    """A float32 value as the shortest decimal that reads back as it."""
    return float(np.asarray(x, dtype=np.float32).reshape(1).astype(str)[0])


def new_record():
    return {"greedy": [], "top5": [], "margin": []}


def step(logits, lp, rec):
    """Appends one step (float32 logits and log-probabilities, (vocab,)) to
    rec; returns the greedy token."""
    top = np.argsort(-logits, kind="stable")[:5]
    rec["greedy"].append(int(top[0]))
    rec["top5"].append([{"id": int(i), "logprob": f32(lp[i])} for i in top])
    rec["margin"].append(f32(logits[top[0]] - logits[top[1]]))
    return int(top[0])


from transformers import AutoTokenizer  # noqa: E402  (the prompts need it on either side)

tok = AutoTokenizer.from_pretrained(hf_dir)
chat_ids = tok.apply_chat_template(CHAT, add_generation_prompt=True, tokenize=True)
if hasattr(chat_ids, "keys"):
    chat_ids = chat_ids["input_ids"]
prompts = {"chat": [int(i) for i in chat_ids], "count": [int(i) for i in tok.encode(COUNT, add_special_tokens=False)]}
for name, ids in prompts.items():
    p = golden["prompts"][name] = {"text": tok.decode(ids), "tokens": ids}
    for side in ("hf", "llamacpp"):
        if side not in sides and side in old.get("prompts", {}).get(name, {}):
            if old["prompts"][name]["tokens"] != ids:
                sys.exit(f"{out}: old {side} record of {name} has other prompt tokens; re-make both sides")
            p[side] = old["prompts"][name][side]

if "hf" in sides:
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(2)
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        for name, ids in prompts.items():
            seq, rec = list(ids), new_record()
            for _ in range(STEPS):
                last = model(torch.tensor([seq])).logits[0, -1].float()  # full recompute, no cache
                seq.append(step(last.numpy(), torch.log_softmax(last, -1).numpy(), rec))
            golden["prompts"][name]["hf"] = rec
            golden["prompts"][name]["hf_text"] = tok.decode(rec["greedy"])
    golden["notes"]["hf"] = ("transformers float32, eager attention, on the safetensors folder written by "
                             "tools/gguf_to_hf.py (transformers' GGUF loader dequantised the Q4_1 GGUF to float32); "
                             "log_softmax in torch float32")
    golden["versions"].update({p: md.version(p) for p in ["torch", "transformers", "gguf", "tokenizers", "safetensors"]})

if "llamacpp" in sides:
    import llama_cpp
    llm = llama_cpp.Llama(model_path=gguf_path, n_ctx=128, n_batch=128, n_ubatch=128, n_threads=2,
                          n_threads_batch=2, logits_all=True, seed=0, verbose=False)
    for name, ids in prompts.items():
        # Cross-check of the tokenizers (recorded, not required): llama.cpp on the text.
        lt = [int(t) for t in llm.tokenize(golden["prompts"][name]["text"].encode(), add_bos=False, special=True)]
        golden["prompts"][name]["llamacpp_tokenizes_text_alike"] = lt == ids
        llm.reset()
        llm.eval(ids)
        rec = new_record()
        for _ in range(STEPS):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            m = logits.max()
            lp = logits - (m + np.log(np.exp(logits - m).sum(dtype=np.float32)))
            llm.eval([step(logits, lp, rec)])
        golden["prompts"][name]["llamacpp"] = rec
        golden["prompts"][name]["llamacpp_text"] = llm.detokenize(rec["greedy"]).decode("utf-8", "replace")
    golden["notes"]["llamacpp"] = ("llama.cpp via llama-cpp-python on SmolLM2-135M-Instruct.Q4_1.gguf, CPU, 2 threads, "
                                   "argmax over llm.scores (logits_all); log_softmax in numpy float32")
    golden["versions"]["llama_cpp_python"] = md.version("llama_cpp_python")
    golden["versions"]["llama_cpp_system_info"] = llama_cpp.llama_print_system_info().decode().strip()

with open(out, "w") as f:
    json.dump(golden, f, indent=1)
    f.write("\n")
print("wrote", out)
