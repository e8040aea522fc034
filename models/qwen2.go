package models

// Qwen2 / Qwen2.5: the Llama decoder with biases on q, k and v (none on o),
// NeoX RoPE in every format; with use_sliding_window, the layers from
// max_window_layers on (or as layer_types says) attend through a window.
func init() {
	Register(&Arch{
		Name:    "qwen2",
		HFNames: []string{"Qwen2ForCausalLM"},
		QKVBias: true,
		Window:  WindowIfUsed,
	})
}
