package engine

import "github.com/vkllm/vkllm/tokenizer/chat"

// ChatConfig is the model's chat template and special tokens, read when
// the LLM was opened: a GGUF file's tokenizer.chat_template and bos/eos
// ids, or a folder's tokenizer_config.json and chat_template.jinja. It is
// nil for an LLM not made by Open. The caller must not modify it.
func (l *LLM) ChatConfig() *chat.Config { return l.chat }

// FileType is llama.cpp's name of a GGUF model's general.file_type
// ("Q4_1", "F16"; see gguf.FileTypeName), or "" for a folder or a file
// that does not say.
func (l *LLM) FileType() string {
	if g := l.model.Files.GGUF; g != nil {
		return g.FileType()
	}
	return ""
}
