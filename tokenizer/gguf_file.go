package tokenizer

import (
	"fmt"

	"github.com/vkllm/vkllm/tensor/gguf"
)

// FromGGUF builds the tokenizer of a GGUF file from its tokenizer.ggml.*
// metadata: model "gpt2" (byte-level BPE; tokenizer.ggml.pre picks the
// pre-tokenizer regexes llama.cpp uses, e.g. "qwen2", "llama-bpe",
// "smollm", "default") or "llama" (SentencePiece BPE with byte fallback;
// merges come from the scores when the file has none, as transformers
// derives them). Control tokens become special added tokens, user-defined
// ones plain added tokens. An unknown model or pre is an *UnsupportedError;
// llama.cpp's "no_vocab" model is ErrNoVocabulary.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	v := &ggufVocab{}
	var err error
	str := func(key string, dst *string, required bool) {
		if err != nil {
			return
		}
		if _, present := f.Get(key); !present {
			if required {
				err = formatErr(key, "missing")
			}
			return
		}
		var ok bool
		if *dst, ok = f.String(key); !ok {
			err = formatErr(key, "not a string")
		}
	}
	str("tokenizer.ggml.model", &v.Model, true)
	v.Pre = "default"
	str("tokenizer.ggml.pre", &v.Pre, false)
	str("tokenizer.chat_template", &v.ChatTemplate, false)
	if err != nil {
		return nil, err
	}
	if v.Model == "no_vocab" {
		return nil, ErrNoVocabulary
	}
	var ok bool
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, formatErr("tokenizer.ggml.tokens", "missing or not an array of strings")
	}
	if _, present := f.Get("tokenizer.ggml.merges"); present {
		if v.Merges, ok = f.Strings("tokenizer.ggml.merges"); !ok {
			return nil, formatErr("tokenizer.ggml.merges", "not an array of strings")
		}
	}
	if _, present := f.Get("tokenizer.ggml.scores"); present {
		if v.Scores, ok = f.Float32s("tokenizer.ggml.scores"); !ok {
			return nil, formatErr("tokenizer.ggml.scores", "not an array of float32")
		}
	}
	if _, present := f.Get("tokenizer.ggml.token_type"); present {
		if v.Types, ok = f.Int32s("tokenizer.ggml.token_type"); !ok {
			return nil, formatErr("tokenizer.ggml.token_type", "not an array of int32")
		}
	}
	id := func(key string) (int64, error) {
		if _, present := f.Get(key); !present {
			return -1, nil
		}
		x, ok := f.Int(key)
		if !ok || x < 0 || x >= int64(len(v.Tokens)) {
			return -1, formatErr(key, "not a token id in [0, %d)", len(v.Tokens))
		}
		return x, nil
	}
	for _, e := range []struct {
		key string
		dst *int64
	}{{"tokenizer.ggml.bos_token_id", &v.BOS}, {"tokenizer.ggml.eos_token_id", &v.EOS},
		{"tokenizer.ggml.unknown_token_id", &v.UNK}, {"tokenizer.ggml.padding_token_id", &v.PAD}} {
		if *e.dst, err = id(e.key); err != nil {
			return nil, err
		}
	}
	for _, key := range []string{"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		x, err := id(key)
		if err != nil {
			return nil, err
		}
		if x >= 0 {
			v.EOT = append(v.EOT, x)
		}
	}
	boolKey := func(key string) (*bool, error) {
		if _, present := f.Get(key); !present {
			return nil, nil
		}
		b, ok := f.Bool(key)
		if !ok {
			return nil, formatErr(key, "not a bool")
		}
		return &b, nil
	}
	if v.AddBOS, err = boolKey("tokenizer.ggml.add_bos_token"); err != nil {
		return nil, err
	}
	if v.AddEOS, err = boolKey("tokenizer.ggml.add_eos_token"); err != nil {
		return nil, err
	}
	if v.AddSpacePrefix, err = boolKey("tokenizer.ggml.add_space_prefix"); err != nil {
		return nil, err
	}
	t, err := fromGGUFVocab(v)
	if err != nil {
		return nil, fmt.Errorf("gguf tokenizer: %w", err)
	}
	return t, nil
}
