"""The evidence for the Vulkan backend's default MatMul: how far from the
transformers goldens llama.cpp itself lands on the tiny GGUF models, and
how far vkllm's cooperative-matrix mode (kernels/vulkan/coop.go: halves
in, float32 sums) lands, side by side, per file, by one metric: the
largest |logit - golden| / max|golden logit| over every prompt position
(each position against its own largest golden logit), F32 KV cache.

    python tools/coopmat_distance.py [--write] [testdata]

llama.cpp's side runs llama-cpp-python (tools/requirements-peer.txt, a CPU
build: it multiplies F16 weights with F16-rounded activations, BF16 with
BF16, Q8_0/Q4_0/Q4_1 with activations quantised to 8 bits per block, F32
in float32). Without llama_cpp installed it reads the numbers last
written to testdata/models/llamacpp-distance.json (--write writes them,
with the versions). vkllm's side runs models.TestVulkanCoopMat on
tools/lavapipe-coopmat.sh's lavapipe (Mesa 26.1, VK_KHR_cooperative_matrix)
and reads the distances it logs. A file of a dtype the mode covers is
"within" when vkllm's distance is at most llama.cpp's; the test holds
each file of the mode to llama.cpp's largest distance over the files of
its dtype, from the JSON (F32 weights are not in the mode: the exact
kernels run them, held to 1e-4).
"""
import json, os, platform, re, subprocess, sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
write = "--write" in sys.argv[1:]
root = os.path.abspath(args[0] if args else "testdata")
models = os.path.join(root, "models")
repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out_json = os.path.join(models, "llamacpp-distance.json")
FILES = [f"{a}-{d}" for a in ["qwen2-tiny", "llama-tiny"] for d in ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1"]] + \
        [f"{a}-{d}" for a in ["qwen3-tiny", "smollm3-tiny"] for d in ["F32", "F16"]]


def distance(got, want):
    """Largest |got - want| / max|want| over positions (rows)."""
    import numpy as np
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float((np.abs(got - want).max(axis=1) / np.abs(want).max(axis=1)).max())


def llamacpp():
    try:
        import llama_cpp
        import numpy as np
    except ImportError as e:
        if not os.path.exists(out_json):
            sys.exit(f"no llama_cpp ({e}) and no {out_json}: pip install -r tools/requirements-peer.txt")
        print(f"llama_cpp not installed ({e}): llama.cpp's side from {os.path.relpath(out_json, repo)}")
        return json.load(open(out_json))
    res = {"versions": {"llama-cpp-python": llama_cpp.__version__, "llama.cpp system": llama_cpp.llama_print_system_info().decode().strip(),
                        "numpy": np.__version__, "python": platform.python_version(), "machine": platform.machine(),
                        "build": "its sdist's vendored llama.cpp, CPU, default cmake flags"},
           "metric": "max over prompt positions of max|logit - golden| / max|golden logit|, F32 KV cache, n_batch 128",
           "files": {}}
    for name in FILES:
        g = json.load(open(os.path.join(models, name + ".golden.json")))
        try:
            llm = llama_cpp.Llama(model_path=os.path.join(models, name + ".gguf"), n_ctx=128, n_batch=128, n_ubatch=128,
                                  n_threads=2, logits_all=True, type_k=0, type_v=0, verbose=False)
        except Exception as e:  # an architecture this llama.cpp lacks
            print(f"{name}: llama.cpp cannot load it: {e}")
            continue
        worst = 0.0
        for p in g["prompts"]:
            llm.reset()
            llm.eval(p["tokens"])
            worst = max(worst, distance(llm.scores[:len(p["tokens"])], p["logits"]))
        res["files"][name] = {"dtype": g["dtype"], "distance": float(f"{worst:.3g}")}
        del llm
    return res


def vkllm():
    env = subprocess.run(["bash", os.path.join(repo, "tools/lavapipe-coopmat.sh")], capture_output=True, text=True, check=True).stdout
    exe = re.search(r"VKLLM_COOP_EXEC=(\S+)", env).group(1)
    run = subprocess.run(["go", "test", "-count=1", "-exec", exe, "./models/", "-run", "TestVulkanCoopMat/parity", "-v"], cwd=repo,
                         capture_output=True, text=True, env=dict(os.environ, VKLLM_REQUIRE_COOPMAT="1"))
    got = {}
    for m in re.finditer(r"(\S+)\.gguf: largest \|logit − golden\| / largest \|golden logit\| = (\S+)", run.stdout):
        got[m.group(1)] = float(m.group(2))
    dev = re.search(r"device: (.*)", run.stdout)
    mesa = [d for d in os.listdir(os.path.join(os.path.dirname(exe), "debs")) if d.startswith("mesa-vulkan-drivers_")]
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    if not got:
        print(run.stdout[-4000:], run.stderr[-2000:])
        sys.exit("vkllm: no distances in models.TestVulkanCoopMat's output")
    return got, {"vkllm": rev, "mesa": mesa[0] if mesa else "?", "device": dev.group(1) if dev else "?"}, run.returncode


lc = llamacpp()
if write:
    json.dump(lc, open(out_json, "w"), indent=1)
    print(f"wrote {os.path.relpath(out_json, repo)}")
vk, vers, rc = vkllm()
print("llama.cpp:", ", ".join(f"{k} {v}" for k, v in lc["versions"].items() if k != "llama.cpp system"))
print("vkllm:", ", ".join(f"{k} {v}" for k, v in vers.items()))
print("largest |logit - golden| / max|golden logit| over prompt positions; vkllm: the cooperative-matrix mode (F32 weights: the exact kernels)")
print(f"{'file':20s} {'dtype':5s} {'llama.cpp':>10s} {'vkllm':>10s}  within")
per = {}
fmt = lambda v: f"{v:.3g}" if v is not None else "n/a"
for name in FILES:
    a, b = lc["files"].get(name, {}).get("distance"), vk.get(name)
    dt = name.rsplit("-", 1)[1]
    within = "n/a" if a is None or b is None else ("yes" if b <= a else "NO")
    if dt == "F32":
        within = "exact kernels (held to 1e-4)"
    print(f"{name:20s} {dt:5s} {fmt(a):>10s} {fmt(b):>10s}  {within}")
    if a is not None and b is not None and dt != "F32":
        pa, pb = per.get(dt, (0.0, 0.0))
        per[dt] = (max(pa, a), max(pb, b))
print("per dtype of the mode, the largest over its files (models.TestVulkanCoopMat's bound is llama.cpp's):")
for dt, (a, b) in per.items():
    print(f"  {dt:5s} llama.cpp {a:.3g}  vkllm {b:.3g}  {'within' if b <= a else 'NOT within'}")
sys.exit(rc)
