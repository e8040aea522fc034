// Package hub fetches models from the Hugging Face Hub into the cache
// huggingface_hub itself uses, so that `vkllm run --model hf://…` and a
// Go program open a model by its Hub name:
//
//	path, err := hub.Resolve(ctx, "hf://Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M", nil)
//	if err != nil { … }
//	l, err := engine.Open(ctx, path, engine.Options{})
//
// Resolve returns a local name unchanged, so a program may pass every
// --model through it. The library (models, engine) never reaches the
// network on its own: only this package does, and only when called.
//
// # Names
//
//	hf://OWNER/REPO[@REVISION][:QUANT | /FILE]
//
// Parse reads one (a malformed one is a *NameError with its offset).
package hub
