package models

// Llama (Llama 2, Llama 3.x, SmolLM2, Mistral without sliding window):
// RMSNorm, RoPE (optionally llama3/linear scaled), GQA attention with
// optional biases, SwiGLU MLP, tied or separate lm_head.
func init() {
	Register(&Arch{
		Name:           "llama",
		HFNames:        []string{"LlamaForCausalLM"},
		GGUFPermutedQK: true,
	})
}
