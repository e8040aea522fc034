package models

// SmolLM3: the Llama decoder in which the layers no_rope_layers marks 0
// skip RoPE (NoPE layers; by default every fourth), and which may use
// sliding windows as Qwen2 does. llama.cpp's "smollm3" GGUF architecture
// does not store the NoPE layers: it fixes them at every fourth layer,
// and so does ConfigFromGGUF. Its converter permutes Q and K as for Llama.
func init() {
	Register(&Arch{
		Name:           "smollm3",
		HFNames:        []string{"SmolLM3ForCausalLM"},
		GGUFPermutedQK: true,
		Window:         WindowIfUsed,
		GGUFNoRoPEStep: 4,
	})
}
