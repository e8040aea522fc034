package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/vkllm/vkllm/tensor/gguf"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// chatConfig finds the chat template and special tokens of a model: the
// folder's tokenizer_config.json / chat_template.jinja, or the GGUF keys
// tokenizer.chat_template and the bos/eos token ids.
func chatConfig(path string) (*chat.Config, error) {
	if strings.HasSuffix(strings.ToLower(path), ".gguf") {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return chat.ConfigFromGGUF(f), nil
	}
	dir := path
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		dir = filepath.Dir(path)
	}
	return chat.LoadConfig(dir)
}

// renderChat renders a chat request file (OpenAI messages, optional tools)
// with the model's template, exactly as apply_chat_template would.
func renderChat(model, requestFile string) (string, error) {
	req, err := os.ReadFile(requestFile)
	if err != nil {
		return "", err
	}
	cfg, err := chatConfig(model)
	if err != nil {
		return "", err
	}
	return cfg.RenderRequest(req)
}
