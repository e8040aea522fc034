package chat

import "github.com/vkllm/vkllm/tensor/gguf"

// ConfigFromGGUF reads the chat template (tokenizer.chat_template) and the
// text of the BOS and EOS tokens from a GGUF file. A file without a
// template gets an empty Template (TemplateFor then gives ChatML).
func ConfigFromGGUF(f *gguf.File) *Config {
	c := &Config{SpecialTokens: map[string]string{}}
	c.Template, _ = f.String("tokenizer.chat_template")
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	for key, name := range map[string]string{"tokenizer.ggml.bos_token_id": "bos_token", "tokenizer.ggml.eos_token_id": "eos_token"} {
		if id, ok := f.Int(key); ok && id >= 0 && id < int64(len(tokens)) {
			c.SpecialTokens[name] = tokens[id]
		}
	}
	return c
}
