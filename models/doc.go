// Package models opens Llama-family models (Llama, Mistral, Qwen2, Qwen3,
// SmolLM3) from HF safetensors folders and GGUF files and runs their decoder over a
// unified-cell KV cache.
//
//	m, err := models.Open(ctx, "path/to/model")        // folder or .gguf
//	ctx, err := m.NewContext(models.ContextParams{ContextLen: 2048, MaxSeqs: 4})
//	var b models.Batch
//	b.Add(tok, pos, true, 0)                        // token, position, logits?, seq ids
//	err = ctx.Decode(b)                             // one forward over the whole batch
//	row := ctx.Logits(0)                            // (vocab) logits of batch index 0
//	b.Embed = []bool{true}                          // also its final hidden state
//	h := ctx.Embeddings(0)                          // (hidden), after the final norm
//
// Layout. A folder holds config.json, tokenizer.json and either one
// *.safetensors or a *.safetensors.index.json with its shards. The config
// (or GGUF metadata) is parsed and the architecture checked before any
// weight is read. HF and GGUF weight names map to the same weights
// (weights.go); 1-D weights (norms, biases) are converted to F32 at load
// time, matrices stay in the file's dtype and are multiplied in it.
//
// Llama GGUF files from llama.cpp have the rows of Q and K permuted for the
// "normal" RoPE layout; vkllm runs them with kernels.RoPENormal instead of
// undoing the permutation (rope_freqs, llama.cpp's Llama 3 scaling
// factors, are used when present). Safetensors and Qwen2 use NeoX RoPE.
//
// Per-family graph differences are flags of the one decoder (Config):
// QKNorm (Qwen3: each head's q and k rows RMS-normalised before RoPE),
// SWALayers with SlidingWindow (a windowed layer's tokens see only the
// cells at positions in (p − window, p], kv.Cache.VisibleWindow; with
// every layer windowed the cache reuses cells that fell out of the
// window, kv.Cache.SetWindow; a model mixing windowed and full layers
// keeps every cell, its full layers see them) and NoRoPELayers (SmolLM3:
// those layers skip RoPE, and SeqAdd/SeqDiv do not re-rotate their K).
//
// Adding a family (the recipe the ones above followed):
//   - config: an Arch entry in its own file (<family>.go: names, flags;
//     a new flag where the graph differs) and, where config.json or the
//     GGUF metadata describe something new, its parsing in config.go and
//     gguf_config.go, refused with a *ConfigError naming the field when
//     unsupported — before any weight is read;
//   - weights: its extra tensors in weightSpecs, and their GGUF names in
//     ggufNames (what llama.cpp's converter writes);
//   - graph: the flag's few lines in decoder.go's forward; a forward of
//     its own file where the graph really differs (another MLP, another
//     norm placement);
//   - goldens: a tiny random model made by transformers and its goldens
//     (tools/make_family_goldens.py), GGUF copies written by llama.cpp's
//     convert_hf_to_gguf.py, entries in parityCases (which the CPU, fast
//     path and Vulkan parity tests all run), and a line in
//     cmd/vkllm's familyModels;
//   - the chat template, if new: tools/make_chat_goldens.py.
//
// Context.Decode checks the batch against the model (tokens, positions,
// size), reserves cells (kv.Cache.Prepare, which checks it against the
// cache), writes their metadata, runs the forward, and on failure rolls
// the cells back: an error leaves the cache exactly as it was. A panic in
// the forward (an op whose operands break its contract: a vkllm bug,
// never bad input, which those checks refuse first) is recovered there
// and comes back as a *PanicError, the model's lock released. NewContext
// allocates everything a Context uses on the backend (the KV cache, and
// the activations for BatchSize tokens, whose first rows each Decode
// views), so Decode allocates nothing there (except once, to grow the
// logits tensors to BatchSize rows, for a batch asking for more rows than
// MaxSeqs), and the cells each token sees are listed only as wide as the
// longest list of the batch: a step's cost follows the cells in use, not
// ContextLen. The KV operations (SeqRm, SeqCp, SeqKeep, SeqAdd, SeqDiv)
// have llama.cpp's semantics.
//
// LoRA. Model.LoadAdapter reads a PEFT adapter folder or a llama.cpp GGUF
// LoRA file (lorafile.go reads it, lora.go applies it) and keeps A (rank,
// in) and scale·B (out, rank) in F32 on the backend, unmerged, whatever
// the base weights' dtype. A Batch names an adapter per token; the
// forward groups the tokens by
// adapter and adds each group's B(A x) to the output of each adapted
// weight (gathering the group's rows, and writing them back, when it is
// not the whole batch), with row-wise ops only, so tokens of different
// adapters share a batch and each gets bitwise what it gets alone. The
// scratch for it is made on the first pass that uses an adapter (and
// grown for a larger rank, or more adapters in one batch).
package models
