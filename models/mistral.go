package models

// Mistral: the Llama decoder where every layer attends through
// sliding_window when config.json sets it (null: full attention).
// llama.cpp converts Mistral checkpoints to its "llama" architecture
// (permuted Q and K, and no window: its converter drops it), so a GGUF
// file of one opens as llama.
func init() {
	Register(&Arch{
		Name:           "mistral",
		HFNames:        []string{"MistralForCausalLM"},
		GGUFPermutedQK: true,
		Window:         WindowAllLayers,
	})
}
