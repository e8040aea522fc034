"""Summarises a tools/gpu/check.sh run: results.json and results.md in OUT.

    python3 tools/gpu/summarize.py --work WORK --out OUT --pp 512 --tg 128 [--small=0|1]

Reads WORK/steps.tsv (step, seconds, status), WORK/runs/SPEC.rN.vkllm.json
(`vkllm bench --json` with its llama-bench peer) and
WORK/runs/SPEC.rN.batched.jsonl (llama-batched-bench --output-format
jsonl), AUX/device.txt (AUX: --aux, default OUT), OUT/tests.log and WORK/sweep.json (`vkllm bench
--sweep --json`: per kernel the default's and the chosen candidate's time
a token, into results.json "sweep"). Each figure in the table is the
median over the rounds that ran, with the round count; a ratio is vkllm's
median over llama.cpp's. Only the Python standard library.
"""
import argparse, glob, json, os, re, statistics


def median(xs):
    return statistics.median(xs) if xs else None


def bench_lines(path, name):
    """Yields (sub-benchmark name, {unit: value}) for each line of a go
    test -bench output file that reports benchmark name (none when the
    file is missing); the -P (GOMAXPROCS) suffix is dropped."""
    if not os.path.exists(path):
        return
    for line in open(path):
        m = re.match(r"^" + re.escape(name) + r"/(\S+?)(?:-\d+)?\s+\d+\s+(.*)$", line)
        if m:
            f = m.group(2).split()
            yield m.group(1), {f[i + 1]: float(f[i]) for i in range(0, len(f) - 1, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--aux", help="where device.txt, serve.txt and cells.txt are (default: --out)")
    ap.add_argument("--pp", type=int, required=True)
    ap.add_argument("--tg", type=int, required=True)
    ap.add_argument("--small", default="0")
    ap.add_argument("--specs", default="", help="the models in table order, space-separated")
    a = ap.parse_args()
    aux = a.aux or a.out

    steps = []
    path = os.path.join(a.work, "steps.tsv")
    if os.path.exists(path):
        for line in open(path):
            name, sec, status = line.rstrip("\n").split("\t")
            steps.append({"step": name, "seconds": float(sec), "status": status})

    device = open(os.path.join(aux, "device.txt")).read() if os.path.exists(os.path.join(aux, "device.txt")) else ""
    names = re.findall(r"deviceName\s*=\s*(.+)", device)
    drivers = re.findall(r"driverInfo\s*=\s*(.+)", device)
    # tests.log: a "## tests-NAME.log" section per binary, its top-level
    # "--- PASS/FAIL/SKIP" lines and its final PASS or FAIL.
    tests = []
    tpath = os.path.join(a.out, "tests.log")
    if os.path.exists(tpath):
        cur = None
        for line in open(tpath):
            m = re.match(r"^## tests-(.+)\.log", line)
            if m:
                cur = {"binary": m.group(1), "result": "no result", "pass": 0, "fail": 0, "skip": 0}
                tests.append(cur)
                continue
            m = re.match(r"^--- (PASS|FAIL|SKIP)", line)
            if cur and m:
                cur[m.group(1).lower()] += 1
            elif cur and re.match(r"^(PASS|FAIL)$", line.strip()):
                cur["result"] = line.strip()

    models = {}
    for f in sorted(glob.glob(os.path.join(a.work, "runs", "*.vkllm.json"))):
        base = os.path.basename(f)[: -len(".vkllm.json")]
        spec_file, rnd = base.rsplit(".r", 1)
        try:
            r = json.load(open(f))
        except ValueError:  # the bench failed before printing
            continue
        spec = r.get("synthetic") or spec_file
        m = models.setdefault(spec, {"spec": spec, "rounds": []})
        run = {"round": int(rnd), "vkllm": {"pp_tps": r["pp_tps"], "tg_tps": r["tg_tps"],
                                            "batch": {str(b["batch"]): b["tps"] for b in r.get("batch", [])},
                                            "build_s": r.get("build_s"), "load_s": r.get("load_s"),
                                            "backend": r.get("backend")}}
        if r.get("peer_error"):
            run["peer_error"] = r["peer_error"]
        if r.get("peer"):
            p = r["peer"]
            run["llama.cpp"] = {"pp_tps": p["pp_tps"], "tg_tps": p["tg_tps"], "pp_stddev": p["pp_stddev_tps"],
                                "tg_stddev": p["tg_stddev_tps"], "reps": p["reps"], "commit": p["commit"],
                                "backends": p.get("backends"), "batch": {}}
        bj = os.path.join(a.work, "runs", base + ".batched.jsonl")
        if os.path.exists(bj) and "llama.cpp" in run:
            for line in open(bj):
                line = line.strip()
                if line.startswith("{"):
                    b = json.loads(line)
                    run["llama.cpp"]["batch"][str(b["pl"])] = b["speed_tg"]
        ej = os.path.join(a.work, "runs", base + ".vkllm-exact.json")
        if os.path.exists(ej):
            try:
                e = json.load(open(ej))
                run["vkllm-exact"] = {"pp_tps": e["pp_tps"], "tg_tps": e["tg_tps"],
                                      "batch": {str(b["batch"]): b["tps"] for b in e.get("batch", [])}}
            except (ValueError, KeyError):
                pass
        m["rounds"].append(run)

    order = a.specs.split()
    table = []
    for spec, m in sorted(models.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)):
        def col(side, key, sub=None):
            xs = []
            for run in m["rounds"]:
                v = run.get(side, {}).get(key)
                if sub is not None:
                    v = (v or {}).get(sub)
                if v:
                    xs.append(v)
            return median(xs), len(xs)
        row = {"spec": spec}
        for key in ("pp_tps", "tg_tps"):
            row["vkllm_" + key], row["n"] = col("vkllm", key)
            row["llama_" + key], _ = col("llama.cpp", key)
        for b in ("1", "4", "16"):
            row["vkllm_b" + b], _ = col("vkllm", "batch", b)
            row["llama_b" + b], _ = col("llama.cpp", "batch", b)
        row["exact_pp_tps"], row["exact_n"] = col("vkllm-exact", "pp_tps")
        row["exact_tg_tps"], _ = col("vkllm-exact", "tg_tps")
        for b in ("1", "4", "16"):
            row["exact_b" + b], _ = col("vkllm-exact", "batch", b)
        m["median"] = row
        table.append(row)

    # serve.txt: the engine's BenchmarkServe/MODE/n=16 lines; cells.txt:
    # the models' BenchmarkDecodeCells/backend=B/ctx=N lines, three each.
    serve, cells = {}, {}
    for sub, vals in bench_lines(os.path.join(aux, "serve.txt"), "BenchmarkServe"):
        serve[sub.split("/")[0]] = vals
    for sub, vals in bench_lines(os.path.join(aux, "cells.txt"), "BenchmarkDecodeCells"):
        m = re.match(r"backend=([\w-]+)/ctx=(\d+)$", sub)
        if m and "tok/s" in vals:
            cells.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(vals["tok/s"])

    # sweep.json: per key the default (its first row), the chosen row and
    # the candidates that were wrong.
    sweep = None
    spath = os.path.join(a.work, "sweep.json")
    if os.path.exists(spath):
        try:
            sj = json.load(open(spath))
        except ValueError:  # the sweep failed before printing
            sj = None
        if sj:
            keys = {}
            for row in sj.get("rows", []):
                k = keys.setdefault(row["key"], {"candidates": 0, "wrong": 0})
                k["candidates"] += 1
                if k["candidates"] == 1:
                    k["default"] = {"knobs": row["knobs"], "us_per_token": row["score_ns"] / 1e3, "gbs": row["weight_gbs"]}
                if row.get("wrong"):
                    k["wrong"] += 1
                if row.get("chosen"):
                    k["chosen"] = {"knobs": row["knobs"], "us_per_token": row["score_ns"] / 1e3, "gbs": row["weight_gbs"]}
            sweep = {"seconds": sj.get("time_ns", 0) / 1e9, "tuning": sj.get("tuning"), "kernels": keys}

    # cpu-runs/SPEC.json: `vkllm bench --backend cpu --json` on every core
    # with the portable llama-bench as its peer (one run each).
    cpu = []
    for f in sorted(glob.glob(os.path.join(a.work, "cpu-runs", "*.json"))):
        try:
            r = json.load(open(f))
        except ValueError:
            continue
        p = r.get("peer") or {}
        cpu.append({"spec": r.get("synthetic") or os.path.basename(f)[:-5], "threads": r.get("threads"), "simd": r.get("simd"),
                    "vkllm_pp_tps": r.get("pp_tps"), "vkllm_tg_tps": r.get("tg_tps"),
                    "llama_pp_tps": p.get("pp_tps"), "llama_tg_tps": p.get("tg_tps"), "llama_backends": p.get("backends"),
                    "bandwidth_gbs": r.get("bandwidth_gbs"), "roofline_frac": r.get("roofline_frac"),
                    "peer_error": r.get("peer_error")})
    skipped_path = os.path.join(a.work, "cpu-runs", "skipped")
    cpu_skipped = open(skipped_path).read().split() if os.path.exists(skipped_path) else []

    res = {"small": a.small == "1", "pp": a.pp, "tg": a.tg, "device": names[0] if names else None,
           "driver": drivers[0] if drivers else None, "steps": steps, "tests": tests,
           "models": list(models.values()), "serve": serve, "cells": cells, "sweep": sweep,
           "cpu": cpu, "cpu_skipped": cpu_skipped}
    json.dump(res, open(os.path.join(a.out, "results.json"), "w"), indent=1)

    def f(x):
        return "–" if x is None else ("%.1f" % x if x >= 10 else "%.2f" % x)

    def ratio(x, y):
        return "–" if not x or not y else "%.2f×" % (x / y)

    lines = []
    label = "lavapipe --small (tiny shapes)" if a.small == "1" else "GPU"
    lines.append("Device: %s (%s), %s. tok/s, median of the rounds; ratio = vkllm / llama.cpp." %
                 (res["device"] or "?", res["driver"] or "?", label))
    lines.append("")
    lines.append("| model | rounds | pp%d vkllm | pp%d llama.cpp | ratio | tg%d vkllm | tg%d llama.cpp | ratio | B=1 vkllm / llama.cpp | B=4 | B=16 |" % (a.pp, a.pp, a.tg, a.tg))
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in table:
        bs = ["%s / %s" % (f(r["vkllm_b" + b]), f(r["llama_b" + b])) for b in ("1", "4", "16")]
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["spec"], r["n"], f(r["vkllm_pp_tps"]), f(r["llama_pp_tps"]), ratio(r["vkllm_pp_tps"], r["llama_pp_tps"]),
            f(r["vkllm_tg_tps"]), f(r["llama_tg_tps"]), ratio(r["vkllm_tg_tps"], r["llama_tg_tps"]), " | ".join(bs)))
    exact = [r for r in table if r.get("exact_n")]
    if exact:
        lines.append("")
        lines.append("The exact kernels (VKLLM_VULKAN_DISABLE=coopmat), vkllm alone, same rounds; ratio = exact / default:")
        lines.append("")
        lines.append("| model | pp%d exact | ratio | tg%d exact | ratio | B=1 | B=4 | B=16 |" % (a.pp, a.tg))
        lines.append("|---|---|---|---|---|---|---|---|")
        for r in exact:
            lines.append("| %s | %s | %s | %s | %s | %s |" % (
                r["spec"], f(r["exact_pp_tps"]), ratio(r["exact_pp_tps"], r["vkllm_pp_tps"]),
                f(r["exact_tg_tps"]), ratio(r["exact_tg_tps"], r["vkllm_tg_tps"]),
                " | ".join(f(r["exact_b" + b]) for b in ("1", "4", "16"))))
    lines.append("")
    con, seq = serve.get("concurrent", {}).get("tok/s"), serve.get("sequential", {}).get("tok/s")
    if con and seq:
        lines.append("Serving (BenchmarkServe, 16 requests of 128 + 128 tokens): %s tok/s at once, %s one by one: %s; "
                     "TTFT p99 %s ms, ITL p99 %s ms at once." % (
                         f(con), f(seq), ratio(con, seq), f(serve["concurrent"].get("ttft_p99_ms")),
                         f(serve["concurrent"].get("itl_p99_ms"))))
    else:
        lines.append("Serving: no BenchmarkServe result.")
    for backend, by in sorted(cells.items()):
        lo, hi = median(by.get("512", [])), median(by.get("32768", []))
        lines.append("Decode with 64 cells in use (BenchmarkDecodeCells, %s, median of %d): %s tok/s at ContextLen 512, %s at 32768 (%s)." % (
            backend, len(by.get("512", [])), f(lo), f(hi), ratio(hi, lo)))
    if sweep:
        lines.append("")
        lines.append("Sweep (%.0f s): per kernel, µs a token of the default → the chosen, weight GB/s." % sweep["seconds"])
        lines.append("")
        lines.append("| kernel | candidates | wrong | default | chosen | knobs |")
        lines.append("|---|---|---|---|---|---|")
        for key, k in sorted(sweep["kernels"].items()):
            d, c = k.get("default", {}), k.get("chosen", {})
            lines.append("| %s | %d | %d | %s µs (%s GB/s) | %s µs (%s GB/s) | %s |" % (
                key, k["candidates"], k["wrong"], f(d.get("us_per_token")), f(d.get("gbs")),
                f(c.get("us_per_token")), f(c.get("gbs")),
                " ".join("%s=%d" % kv for kv in sorted(c.get("knobs", {}).items())) or "none right"))
    if cpu or cpu_skipped:
        lines.append("")
        lines.append("CPU backend on every core against llama.cpp's portable CPU build (one run each; ratio = vkllm / llama.cpp):")
        lines.append("")
        lines.append("| model | threads | pp%d vkllm | llama.cpp | ratio | tg%d vkllm | llama.cpp | ratio | decode / probe bandwidth |" % (a.pp, a.tg))
        lines.append("|---|---|---|---|---|---|---|---|---|")
        for r in cpu:
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["spec"], r["threads"], f(r["vkllm_pp_tps"]), f(r["llama_pp_tps"]), ratio(r["vkllm_pp_tps"], r["llama_pp_tps"]),
                f(r["vkllm_tg_tps"]), f(r["llama_tg_tps"]), ratio(r["vkllm_tg_tps"], r["llama_tg_tps"]),
                f(r["roofline_frac"]) if r["roofline_frac"] else "–"))
        for spec in cpu_skipped:
            lines.append("| %s | skipped (time) | | | | | | | |" % spec)
    lines.append("")
    lines.append("Tests: " + ("; ".join("%s %s (%d passed, %d failed, %d skipped)" % (
        t["binary"], t["result"], t["pass"], t["fail"], t["skip"]) for t in tests) if tests else "none ran"))
    lines.append("")
    lines.append("| step | s | status |")
    lines.append("|---|---|---|")
    for s in steps:
        lines.append("| %s | %.1f | %s |" % (s["step"], s["seconds"], s["status"]))
    open(os.path.join(a.out, "results.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
