#!/usr/bin/env python3
"""Time HF tokenizers on the text of Go's BenchmarkEncode, on one thread.

  RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false \\
      /work/venv/bin/python tools/bench_tokenizer.py [--reps 5]

Builds the same ~1 MB text as tokenizer/bench_test.go (same fragments, same
LCG; compare the printed sha256 with the benchmark's log line), then encodes
the whole text in one call (add_special_tokens=False), as BenchmarkEncode
does (--by-lines: one call per line, as BenchmarkEncodeLines), and prints MB/s per tokenizer (best of --reps, after one warm-up call
that fills the word cache, as Go's b.Loop warms its own).
"""
import argparse
import gzip
import hashlib
import json
import os
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TD = os.path.join(ROOT, "testdata", "tokenizers")


def bench_text():
    doc = json.load(open(os.path.join(TD, "bench_fragments.json"), encoding="utf-8"))
    order = ["english", "code", "cjk", "numbers", "emoji", "space"]
    state = 1

    def nxt():
        nonlocal state
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        return state >> 16

    parts, n = [], 0
    while n < 1 << 20:
        r = nxt() % 100
        cat = order[-1]
        for c in order:
            if r < doc["weights"][c]:
                cat = c
                break
            r -= doc["weights"][c]
        lst = doc["fragments"][cat]
        f = lst[nxt() % len(lst)]
        parts.append(f)
        n += len(f.encode())
    return "".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--names", default="qwen3,llama3,llama2,smollm2")
    ap.add_argument("--by-lines", action="store_true",
                    help="encode line by line (Go: BenchmarkEncodeLines) instead of the whole text at once")
    args = ap.parse_args()
    text = bench_text()
    raw = text.encode()
    print(f"tokenizers {tokenizers.__version__}, python {sys.version.split()[0]}, "
          f"RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']}")
    print(f"bench text: {len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()}")
    for name in args.names.split(","):
        tok = Tokenizer.from_str(gzip.open(os.path.join(TD, name, "tokenizer.json.gz")).read().decode())
        lines = None
        if args.by_lines:  # "\n"-terminated, as Go's strings.SplitAfter(text, "\n")
            parts = text.split("\n")
            lines = [p + "\n" for p in parts[:-1]] + parts[-1:]

        def run():
            if lines is None:
                return len(tok.encode(text, add_special_tokens=False).ids)
            return sum(len(tok.encode(l, add_special_tokens=False).ids) for l in lines)

        ntok = run()  # warm-up
        best = float("inf")
        for _ in range(args.reps):
            t0 = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - t0)
        print(f"{name:8s} {len(raw) / best / 1e6:8.2f} MB/s  ({best * 1e3:.1f} ms, {ntok} tokens)")


if __name__ == "__main__":
    main()
