package models

// Qwen2 / Qwen2.5: the Llama decoder with biases on q, k and v (none on o),
// NeoX RoPE in every format.
func init() {
	Register(&Arch{
		Name:    "qwen2",
		HFNames: []string{"Qwen2ForCausalLM"},
		QKVBias: true,
	})
}
