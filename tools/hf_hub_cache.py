#!/usr/bin/env python3
"""Writes or reads a Hugging Face cache with the real huggingface_hub.

The hub package's interop test runs this against its stand-in Hub (HF_ENDPOINT
points at it, HF_HUB_CACHE at a temporary cache) to show that the cache vkllm
writes is huggingface_hub's own, both ways:

    HF_ENDPOINT=http://127.0.0.1:PORT HF_HUB_CACHE=DIR \
        python3 tools/hf_hub_cache.py download OWNER/REPO FILE...
    HF_HUB_OFFLINE=1 HF_HUB_CACHE=DIR python3 tools/hf_hub_cache.py read OWNER/REPO FILE...

Each FILE prints one line, "PATH SHA256", the local path hf_hub_download gives
and the SHA-256 of its bytes. `read` never reaches the network (offline,
local_files_only), so it succeeds only when the file is already in the cache.
"""
import hashlib
import sys

from huggingface_hub import hf_hub_download


def main():
    mode, repo, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    for f in files:
        path = hf_hub_download(repo, f, local_files_only=(mode == "read"))
        with open(path, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        print(path, digest)


if __name__ == "__main__":
    main()
