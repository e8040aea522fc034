package models

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/errcode"
)

const qwen2Config = `{
  "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
  "vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864,
  "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "max_position_embeddings": 32768,
  "tie_word_embeddings": true, "bos_token_id": 151643, "eos_token_id": 151645,
  "use_sliding_window": false, "sliding_window": 32768, "hidden_act": "silu", "torch_dtype": "bfloat16"
}`

const llamaConfig = `{
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192,
  "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
  "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 131072,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "tie_word_embeddings": true, "attention_bias": false,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]
}`

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(qwen2Config), "q.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.Arch != "qwen2" || c.HeadDim != 64 || c.NumKVHeads != 2 || !c.AttentionBias || c.OutputBias || !c.TieEmbedding ||
		c.RoPETheta != 1e6 || len(c.EOS) != 1 || c.EOS[0] != 151645 || c.RoPEScaling != nil {
		t.Errorf("qwen2: %+v", c)
	}
	c, err = ParseConfig([]byte(llamaConfig), "l.json")
	if err != nil {
		t.Fatal(err)
	}
	want := RoPEScaling{Type: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 8192}
	if c.Arch != "llama" || c.AttentionBias || c.RoPEScaling == nil || *c.RoPEScaling != want || len(c.EOS) != 3 || c.HeadDim != 64 {
		t.Errorf("llama: %+v %+v", c, c.RoPEScaling)
	}
}

// TestParseConfigV5 checks transformers ≥ 5's rope_parameters.
func TestParseConfigV5(t *testing.T) {
	src := strings.Replace(qwen2Config, `"rope_theta": 1000000.0,`, `"rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"},`, 1)
	c, err := ParseConfig([]byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.RoPETheta != 5e5 || c.RoPEScaling != nil {
		t.Errorf("theta %v scaling %+v", c.RoPETheta, c.RoPEScaling)
	}
	src = strings.Replace(qwen2Config, `"rope_theta": 1000000.0,`, `"rope_parameters": {"rope_theta": 10000.0, "rope_type": "linear", "factor": 2.0},`, 1)
	if c, err = ParseConfig([]byte(src), ""); err != nil || c.RoPEScaling == nil || c.RoPEScaling.Factor != 2 || c.RoPETheta != 1e4 {
		t.Errorf("linear via rope_parameters: %+v %v", c, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name, old, new string
		code           errcode.Code
		field          string
	}{
		{"arch", `["Qwen2ForCausalLM"], "model_type": "qwen2"`, `["GPTNeoXForCausalLM"], "model_type": "gpt_neox"`, errcode.ArchUnsupported, ""},
		{"layer type", `"use_sliding_window": false`, `"use_sliding_window": true, "layer_types": ["chunked_attention"` + strings.Repeat(`, "full_attention"`, 23) + `]`, errcode.LoadFailed, "layer_types"},
		{"layer types count", `"use_sliding_window": false`, `"use_sliding_window": true, "layer_types": ["full_attention"]`, errcode.ModelCorrupt, "layer_types"},
		{"window missing", `"use_sliding_window": false, "sliding_window": 32768`, `"use_sliding_window": true, "sliding_window": null, "max_window_layers": 4`, errcode.ModelCorrupt, "sliding_window"},
		{"no_rope count", `"use_sliding_window": false`, `"no_rope_layers": [1, 0]`, errcode.ModelCorrupt, "no_rope_layers"},
		{"no_rope value", `"use_sliding_window": false`, `"no_rope_layers": [2` + strings.Repeat(`, 1`, 23) + `]`, errcode.ModelCorrupt, "no_rope_layers"},
		{"rope type", `"rope_theta": 1000000.0,`, `"rope_scaling": {"type": "yarn", "factor": 4},`, errcode.LoadFailed, "rope_scaling.type"},
		{"string size", `"hidden_size": 896`, `"hidden_size": "896"`, errcode.ModelCorrupt, "hidden_size"},
		{"fraction", `"hidden_size": 896`, `"hidden_size": 896.5`, errcode.ModelCorrupt, "hidden_size"},
		{"missing", `"hidden_size": 896,`, ``, errcode.ModelCorrupt, "hidden_size"},
		{"zero layers", `"num_hidden_layers": 24`, `"num_hidden_layers": 0`, errcode.ModelCorrupt, "num_hidden_layers"},
		{"gqa", `"num_key_value_heads": 2`, `"num_key_value_heads": 3`, errcode.ModelCorrupt, "num_key_value_heads"},
		{"heads", `"num_attention_heads": 14`, `"num_attention_heads": 13`, errcode.ModelCorrupt, "num_attention_heads"},
		{"eps", `"rms_norm_eps": 1e-06`, `"rms_norm_eps": -1`, errcode.ModelCorrupt, "rms_norm_eps"},
		{"eos", `"eos_token_id": 151645`, `"eos_token_id": 999999`, errcode.ModelCorrupt, "bos_token_id/eos_token_id"},
		{"eos type", `"eos_token_id": 151645`, `"eos_token_id": "x"`, errcode.ModelCorrupt, "eos_token_id"},
		{"act", `"hidden_act": "silu"`, `"hidden_act": "gelu"`, errcode.LoadFailed, "hidden_act"},
		{"json", `{`, `[`, errcode.ModelCorrupt, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(qwen2Config, c.old, c.new, 1)
			if src == qwen2Config {
				t.Fatalf("replacement %q not found", c.old)
			}
			_, err := ParseConfig([]byte(src), "config.json")
			if err == nil {
				t.Fatal("no error")
			}
			if got := errcode.Of(err); got != c.code {
				t.Errorf("code %s, want %s (%v)", got, c.code, err)
			}
			var ce *ConfigError
			if c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field) {
				t.Errorf("field: %v, want %q", err, c.field)
			}
		})
	}
}

// TestParseConfigFamilies checks what sets Qwen3, the sliding-window
// configurations and SmolLM3's NoPE layers apart, read as transformers
// reads them.
func TestParseConfigFamilies(t *testing.T) {
	swaQwen2 := strings.Replace(qwen2Config, `"use_sliding_window": false, "sliding_window": 32768`,
		`"use_sliding_window": true, "sliding_window": 4096, "max_window_layers": 21`, 1)
	windowed := func(from, n int) []bool {
		v := make([]bool, n)
		for l := from; l < n; l++ {
			v[l] = true
		}
		return v
	}
	cases := []struct {
		name, src    string
		arch         string
		qkNorm       bool
		window       int
		swa, noRoPE  []bool
		allWindowed  bool
		headDim, kvH int
	}{
		{"qwen2 window off", qwen2Config, "qwen2", false, 0, nil, nil, false, 64, 2},
		{"qwen2 max_window_layers", swaQwen2, "qwen2", false, 4096, windowed(21, 24), nil, false, 64, 2},
		{"qwen2 layer_types", strings.Replace(swaQwen2, `"max_window_layers": 21`,
			`"layer_types": [`+strings.Repeat(`"sliding_attention", `, 23)+`"full_attention"]`, 1),
			"qwen2", false, 4096, append(windowed(0, 23), false), nil, false, 64, 2},
		{"qwen2 layer_types unused", strings.Replace(qwen2Config, `"use_sliding_window": false`,
			`"use_sliding_window": false, "layer_types": [`+strings.Repeat(`"sliding_attention", `, 23)+`"full_attention"]`, 1),
			"qwen2", false, 0, nil, nil, false, 64, 2},
		{"qwen3", strings.NewReplacer(`Qwen2ForCausalLM`, `Qwen3ForCausalLM`, `"qwen2"`, `"qwen3"`,
			`"num_key_value_heads": 2`, `"num_key_value_heads": 2, "head_dim": 128`).Replace(qwen2Config),
			"qwen3", true, 0, nil, nil, false, 128, 2},
		{"mistral", strings.NewReplacer(`LlamaForCausalLM`, `MistralForCausalLM`, `"llama"`, `"mistral"`,
			`"attention_bias": false`, `"sliding_window": 4096, "use_sliding_window": false`).Replace(llamaConfig),
			"mistral", false, 4096, windowed(0, 16), nil, true, 64, 8},
		{"mistral no window", strings.NewReplacer(`LlamaForCausalLM`, `MistralForCausalLM`, `"llama"`, `"mistral"`,
			`"attention_bias": false`, `"sliding_window": null`).Replace(llamaConfig),
			"mistral", false, 0, nil, nil, false, 64, 8},
		{"llama ignores windows", strings.Replace(llamaConfig, `"attention_bias": false`, `"sliding_window": 4096, "use_sliding_window": true`, 1),
			"llama", false, 0, nil, nil, false, 64, 8},
		{"smollm3", strings.NewReplacer(`LlamaForCausalLM`, `SmolLM3ForCausalLM`, `"llama"`, `"smollm3"`,
			`"num_hidden_layers": 16`, `"num_hidden_layers": 4, "no_rope_layers": [1, 1, 1, 0]`).Replace(llamaConfig),
			"smollm3", false, 0, nil, []bool{false, false, false, true}, false, 64, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(c.src), "config.json")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Arch != c.arch || cfg.QKNorm != c.qkNorm || cfg.SlidingWindow != c.window || !slices.Equal(cfg.SWALayers, c.swa) ||
				!slices.Equal(cfg.NoRoPELayers, c.noRoPE) || cfg.AllWindowed() != c.allWindowed || cfg.HeadDim != c.headDim || cfg.NumKVHeads != c.kvH {
				t.Errorf("got arch %s qknorm %v window %d swa %v nope %v all %v hd %d kv %d", cfg.Arch, cfg.QKNorm, cfg.SlidingWindow,
					cfg.SWALayers, cfg.NoRoPELayers, cfg.AllWindowed(), cfg.HeadDim, cfg.NumKVHeads)
			}
		})
	}
}

func TestUnsupportedArchMessage(t *testing.T) {
	_, err := ParseConfig([]byte(`{"architectures": ["MambaForCausalLM"]}`), "")
	want := `model architecture "MambaForCausalLM" is not supported; supported: [llama mistral qwen2 qwen3 smollm3]`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(qwen2Config))
	f.Add([]byte(llamaConfig))
	f.Add([]byte(`{"architectures":["LlamaForCausalLM"],"hidden_size":1e300,"num_attention_heads":-1}`))
	f.Add([]byte(`{"model_type":"llama","rope_scaling":{"rope_type":"llama3","factor":1e400}}`))
	f.Add([]byte(`{"model_type":"qwen2","eos_token_id":[1,2,-3],"head_dim":null}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data, "fuzz")
		if err != nil {
			if errcode.Of(err) == errcode.LoadFailed && !errors.As(err, new(*ConfigError)) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted config fails Validate: %v", err)
		}
	})
}
