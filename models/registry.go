package models

import (
	"sort"
)

// Arch describes a supported architecture: the names that select it and
// what sets it apart within the Llama family.
type Arch struct {
	// Name is vkllm's name, also GGUF's general.architecture.
	Name string
	// HFNames are config.json "architectures" values; model_type equal to
	// Name also selects it.
	HFNames []string
	// QKVBias: q, k and v projections always carry biases (Qwen2).
	QKVBias bool
	// DefaultTie: tie_word_embeddings when config.json omits it.
	DefaultTie bool
	// GGUFPermutedQK: llama.cpp's converter permuted the rows of Q and K
	// of this architecture for its "normal" RoPE layout, so a GGUF of it
	// runs with kernels.RoPENormal; from safetensors it runs with NeoX.
	GGUFPermutedQK bool
	// QKNorm: q and k are RMS-normalised per head before RoPE (Qwen3).
	QKNorm bool
	// Window says how config.json's sliding_window applies (as the
	// architecture's transformers code reads it).
	Window WindowRule
	// GGUFNoRoPEStep: in a GGUF file of this architecture, every layer l
	// with (l+1) % GGUFNoRoPEStep == 0 skips RoPE (llama.cpp's
	// n_no_rope_layer_step, which its converter does not write); 0: none.
	GGUFNoRoPEStep int
}

// WindowRule is how an architecture's config.json describes sliding
// windows.
type WindowRule int

const (
	// NoWindow: the architecture has none; sliding_window is ignored
	// (Llama).
	NoWindow WindowRule = iota
	// WindowAllLayers: every layer attends through sliding_window when
	// it is set (Mistral; layer_types is ignored).
	WindowAllLayers
	// WindowIfUsed: only with use_sliding_window true, the layers
	// layer_types marks "sliding_attention", or without layer_types
	// those from max_window_layers on (Qwen2, Qwen3, SmolLM3).
	WindowIfUsed
)

var archs = map[string]*Arch{}

// Register adds an architecture. Model files call it from init.
func Register(a *Arch) {
	if _, dup := archs[a.Name]; dup {
		panic("models: Register called twice for " + a.Name)
	}
	archs[a.Name] = a
}

// Supported lists the names of the registered architectures, sorted.
func Supported() []string {
	names := make([]string, 0, len(archs))
	for n := range archs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// lookupArch finds the architecture named by config.json's architectures
// list or model_type, or by GGUF's general.architecture (as modelType).
func lookupArch(hfNames []string, modelType string) (*Arch, error) {
	for _, want := range hfNames {
		for _, a := range archs {
			for _, n := range a.HFNames {
				if n == want {
					return a, nil
				}
			}
		}
	}
	if a, ok := archs[modelType]; ok {
		return a, nil
	}
	name := modelType
	if len(hfNames) > 0 {
		name = hfNames[0]
	}
	if name == "" {
		name = "(none given)"
	}
	return nil, &UnsupportedArchError{Arch: name, Supported: Supported()}
}
