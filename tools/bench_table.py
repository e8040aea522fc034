#!/usr/bin/env python3
"""Runs the bench command on every GGUF in a folder, several times, with
llama.cpp beside it, and writes what issue #9 asks for:

  OUT/bench.txt   Go benchmark lines (ours and llama.cpp's, one per run),
                  for benchstat: benchstat -col /backend OUT/bench.txt
  OUT/runs.jsonl  every run's --json object
  OUT/table.md    the medians: prefill and decode tokens/s, ours ÷ llama.cpp,
                  decode as a fraction of the read-bandwidth roofline (the
                  probe after the run; "window": the probe passes between
                  our decode steps)

Usage (from the repository root, after tools/make_bench_model.py and
tools/build-llama-bench.sh, which builds the peer, llama.cpp's llama-bench):

  go build -o /tmp/vkllm ./cmd/vkllm
  python3 tools/bench_table.py --bench /tmp/vkllm \\
      --dir /tmp/bench-models --runs 5 --threads 2 --out /tmp/table

--synthetic SHAPE:TYPE … first writes those random models into --dir (as
`vkllm bench --synthetic SPEC --write-gguf`; a file already there is kept)
and benches only them; --real-layouts adds the files shaped like the
downloads people run: the Qwen2.5-0.5B, Llama-3.2-1B and Qwen3-0.6B shapes
in the per-tensor mix llama-quantize writes for Q4_K_M, Q5_K_M and IQ4_XS
(tools/check_layouts_gguf.py checks those files with llama.cpp's reader);
--goal adds issue 41's goal list, every common file type (Q4_0, Q4_K_M,
Q5_K_M, Q6_K, Q8_0, F16, BF16, IQ4_XS) on the Qwen2.5-0.5B and
Llama-3.2-1B shapes (Q6_K, Q8_0, F16 and BF16 are one type throughout, as
llama-quantize writes them; Q4_0 is one type throughout too, where
llama-quantize makes the output matrix Q6_K):

  python3 tools/bench_table.py --bench /tmp/vkllm --dir /tmp/layouts \\
      --real-layouts --runs 5 --threads 2 --kv f16 --out /tmp/table

Runs alternate over the files (run 1 of every file, then run 2, …) so that
a slow spell of a shared machine spreads over all of them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys


# The bench files shaped like the GGUFs people download (issue 41).
REAL_LAYOUTS = [s + ":" + l for s in ["qwen2.5-0.5b", "llama-3.2-1b", "qwen3-0.6b"] for l in ["Q4_K_M", "Q5_K_M", "IQ4_XS"]]
GOAL = [s + ":" + t for s in ["qwen2.5-0.5b", "llama-3.2-1b"] for t in ["Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0", "F16", "BF16", "IQ4_XS"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True, help="the built vkllm command (run as: vkllm bench …)")
    ap.add_argument("--dir", required=True, help="folder of .gguf files")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--peer", default="llama.cpp", help='"" for none')
    ap.add_argument("--kv", default="f32", help="KV cache type for both sides: f32 or f16")
    ap.add_argument("--out", required=True)
    ap.add_argument("--synthetic", nargs="*", default=[], metavar="SHAPE:TYPE",
                    help="write these random models into --dir first and bench only them")
    ap.add_argument("--real-layouts", action="store_true", help="add " + " ".join(REAL_LAYOUTS) + " to --synthetic")
    ap.add_argument("--goal", action="store_true", help="add " + " ".join(GOAL) + " to --synthetic")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    specs = a.synthetic + (REAL_LAYOUTS if a.real_layouts else [])
    specs += [g for g in (GOAL if a.goal else []) if g not in specs]
    if specs:
        os.makedirs(a.dir, exist_ok=True)
        files = []
        for spec in specs:
            f = spec.replace(":", "-") + ".gguf"
            if not os.path.exists(os.path.join(a.dir, f)):
                subprocess.run([a.bench, "bench", "--synthetic", spec, "--write-gguf", os.path.join(a.dir, f)], check=True)
            files.append(f)
    else:
        files = sorted(f for f in os.listdir(a.dir) if f.endswith(".gguf"))
    runs = {f: [] for f in files}
    with open(os.path.join(a.out, "runs.jsonl"), "w") as jl, open(os.path.join(a.out, "bench.txt"), "w") as bt:
        for i in range(a.runs):
            for f in files:
                cmd = [a.bench, "bench", "--model", os.path.join(a.dir, f), "--pp", str(a.pp), "--tg", str(a.tg),
                       "--threads", str(a.threads), "--kv", a.kv, "--json"]
                if a.peer:
                    cmd += ["--peer", a.peer]
                p = subprocess.run(cmd, capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit("%s: %s" % (" ".join(cmd), p.stderr[-2000:]))
                r = json.loads(p.stdout)
                runs[f].append(r)
                jl.write(json.dumps(r) + "\n")
                name = f[: -len(".gguf")]
                for side, pp, tg in [(r["backend"], r["pp_tps"], r["tg_tps"])] + (
                        [(r["peer"]["name"], r["peer"]["pp_tps"], r["peer"]["tg_tps"])] if r.get("peer") else []):
                    bt.write("BenchmarkPrefill/pp=%d/model=%s/backend=%s 1 %.0f ns/op %.3f tok/s\n" % (a.pp, name, side, 1e9 / pp, pp))
                    bt.write("BenchmarkDecode/tg=%d/model=%s/backend=%s 1 %.0f ns/op %.3f tok/s\n" % (a.tg, name, side, 1e9 / tg, tg))
                bt.flush()
                jl.flush()
                print("run %d %s: pp %.1f tg %.1f%s (load %s)" % (i + 1, f, r["pp_tps"], r["tg_tps"],
                      "; peer pp %.1f tg %.1f" % (r["peer"]["pp_tps"], r["peer"]["tg_tps"]) if r.get("peer") else "",
                      r.get("loadavg", "?")), file=sys.stderr, flush=True)
    med = statistics.median
    # roofline: against the probe after the run; window: against the
    # probe passes between our decode steps (bandwidth_window_gbs)
    lines = ["| file | pp%d ours / llama.cpp | ratio | tg%d ours / llama.cpp | ratio | roofline ours / llama.cpp | bandwidth GB/s | window roofline | window GB/s | peak RSS MiB |" % (a.pp, a.tg),
             "|---|---|---|---|---|---|---|---|---|---|"]
    for f in files:
        rs = runs[f]
        pp, tg = med(r["pp_tps"] for r in rs), med(r["tg_tps"] for r in rs)
        bw = med(r["bandwidth_gbs"] for r in rs)
        roof = med(r["roofline_frac"] for r in rs)
        wbw = med(r.get("bandwidth_window_gbs", 0) for r in rs)
        wroof = med(r.get("roofline_window_frac", 0) for r in rs)
        rss = max(r["peak_rss_mb"] for r in rs)
        if rs[0].get("peer"):
            ppp, ptg = med(r["peer"]["pp_tps"] for r in rs), med(r["peer"]["tg_tps"] for r in rs)
            proof = med(r["model_bytes"] * r["peer"]["tg_tps"] / (r["bandwidth_gbs"] * 1e9) for r in rs)
            lines.append("| %s | %.1f / %.1f | %.2f× | %.1f / %.1f | %.2f× | %.2f / %.2f | %.1f | %.2f | %.1f | %.0f |" % (
                f[:-5], pp, ppp, pp / ppp, tg, ptg, tg / ptg, roof, proof, bw, wroof, wbw, rss))
        else:
            lines.append("| %s | %.1f | | %.1f | | %.2f | %.1f | %.2f | %.1f | %.0f |" % (f[:-5], pp, tg, roof, bw, wroof, wbw, rss))
    with open(os.path.join(a.out, "table.md"), "w") as t:
        t.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
