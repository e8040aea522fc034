// Package models opens Llama-family models (Llama, Qwen2) from HF
// safetensors folders and GGUF files and runs their decoder over a
// unified-cell KV cache.
//
//	m, err := models.Open(ctx, "path/to/model")        // folder or .gguf
//	ctx, err := m.NewContext(models.ContextParams{ContextLen: 2048, MaxSeqs: 4})
//	var b models.Batch
//	b.Add(tok, pos, true, 0)                        // token, position, logits?, seq ids
//	err = ctx.Decode(b)                             // one forward over the whole batch
//	row := ctx.Logits(0)                            // (vocab) logits of batch index 0
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
// LoRA file (lora.go) and keeps A (rank, in) and scale·B (out, rank) in
// F32 on the backend, unmerged, whatever the base weights' dtype. A
// Batch names an adapter per token; the forward groups the tokens by
// adapter and adds each group's B(A x) to the output of each adapted
// weight (gathering the group's rows, and writing them back, when it is
// not the whole batch), with row-wise ops only, so tokens of different
// adapters share a batch and each gets bitwise what it gets alone. The
// scratch for it is made on the first pass that uses an adapter (and
// grown for a larger rank, or more adapters in one batch).
package models
