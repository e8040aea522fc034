// Package hub fetches models from the Hugging Face Hub into the cache
// huggingface_hub itself keeps, so that a program opens a model by its
// Hub name:
//
//	path, err := hub.Resolve(ctx, "hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M", nil)
//	if err != nil { … }
//	llm, err := engine.Open(ctx, path, engine.Options{})
//
// Resolve returns a local path unchanged, so a program may pass every
// model argument through it. The rest of the library (models, engine)
// never reaches the network; only this package does, and only when
// called. For more control (a progress callback, another cache, offline)
// make a Client, usually with FromEnv, and call Pull; List and Remove
// look after the cache.
//
// # Names
//
//	hf://OWNER/REPO[@REVISION][:QUANT | /FILE]
//
// Parse reads one (a malformed one is a *NameError with its offset).
// REVISION is a branch, tag or commit, "main" by default; one with a
// slash is escaped (refs%2Fpr%2F1). What a name picks among the
// repository's files:
//
//   - /FILE: that file; a shard of a split GGUF (NAME-00001-of-00003.gguf)
//     brings its siblings, the model being all of them.
//   - :QUANT: the GGUF model whose file name carries QUANT as a word of
//     its own, case-insensitively (":q4_k_m" is model-Q4_K_M.gguf, not
//     model-Q4_K_M_L.gguf); vision projectors (mmproj) are never models.
//     None is ErrNoMatch listing those there are; several, ErrAmbiguous.
//   - neither: a repository with config.json and safetensors weights at
//     its root gives that folder (config, generation config, tokenizer
//     files, the *.safetensors.index.json and the shards it names, or the
//     one .safetensors file); otherwise a PEFT LoRA adapter at its root
//     (no GGUF files; adapter_config.json and adapter_model.safetensors)
//     gives that folder; otherwise its GGUF model of DefaultQuants
//     (Q4_K_M, else Q4_0), else its smallest Q4 model, else its only
//     model (a GGUF LoRA adapter's repository too), else ErrAmbiguous
//     listing the choices.
//
// # The Hub's interface
//
// The file list, with sizes and digests, comes from the model info API,
// GET {endpoint}/api/models/{OWNER}/{REPO}/revision/{REVISION}?blobs=true,
// whose "sha" fixes the commit every file is then fetched at, by
// GET {endpoint}/{OWNER}/{REPO}/resolve/{COMMIT}/{FILE}, redirects
// followed (large files live on another host; the token goes to the
// endpoint's host only). A 401 or 403 is an *AccessError naming the
// repository's page, where a gated model's licence is accepted; a 404 an
// *HTTPError wrapping ErrNotFound.
//
// FromEnv reads huggingface_hub's variables: HF_ENDPOINT (a mirror),
// HF_TOKEN (or the older HUGGING_FACE_HUB_TOKEN; else the token file at
// HF_TOKEN_PATH or $HF_HOME/token, which `hf auth login` writes),
// HF_HUB_CACHE (else $HF_HOME/hub, HF_HOME being ~/.cache/huggingface by
// default) and HF_HUB_OFFLINE=1 (the cache only; an unreachable Hub also
// falls back to the cache).
//
// # The cache
//
// huggingface_hub's layout, so a model pulled by its tools is not
// fetched again and theirs find ours:
//
//	models--OWNER--REPO/blobs/DIGEST          the bytes, named by SHA-256 (LFS) or git blob id
//	models--OWNER--REPO/snapshots/COMMIT/FILE relative links to the blobs
//	models--OWNER--REPO/refs/REVISION         the commit the revision was at
//	.locks/models--OWNER--REPO/DIGEST.lock    one writer per blob
//
// A blob is written as DIGEST.incomplete, resumed with a Range request
// after a cut, checked against the Hub's digest (SHA-256 for LFS files,
// the git blob id otherwise: a mismatch is a *ChecksumError and the
// partial file is deleted), renamed into place and linked into the
// snapshot, all under its lock (a flock, the lock huggingface_hub takes
// too); a blob already there is used as it is, linked under the same
// lock. Remove takes that lock before it deletes a blob no snapshot links
// to, so `vkllm rm` beside a pull of the same model never deletes a blob
// between its download and its link. The disk's free space is checked
// against what is missing before any download (*SpaceError). Files
// download Client.Parallel at a time, reporting to one Progress callback.
package hub
