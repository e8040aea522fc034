package models

// Qwen3 (dense): the Llama decoder with per-head RMSNorm on q and k
// before RoPE (self_attn.q_norm / k_norm, GGUF attn_q_norm / attn_k_norm),
// no biases, head_dim apart from hidden/heads, NeoX RoPE in every format
// (llama.cpp does not permute its Q and K), sliding windows as Qwen2.
func init() {
	Register(&Arch{
		Name:    "qwen3",
		HFNames: []string{"Qwen3ForCausalLM"},
		QKNorm:  true,
		Window:  WindowIfUsed,
	})
}
