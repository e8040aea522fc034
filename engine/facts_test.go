package engine

import (
	"context"
	"testing"

	"github.com/vkllm/vkllm/kernels"
)

// TestFacts: the LLM answers what a server asks of a model file without
// reopening it: the file type of a GGUF (none for a folder) and the chat
// configuration with its special tokens.
func TestFacts(t *testing.T) {
	for _, c := range []struct {
		path, fileType string
	}{
		{"../testdata/models/qwen2-tiny-Q4_1.gguf", "Q4_1"},
		{"../testdata/models/qwen2-tiny-F16.gguf", "F16"},
		{tinyModel, ""},
	} {
		t.Run(c.path, func(t *testing.T) {
			l, err := Open(context.Background(), c.path, Options{Backend: kernels.CPU, MaxSeqs: 1, ContextLen: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if got := l.FileType(); got != c.fileType {
				t.Errorf("FileType() = %q, want %q", got, c.fileType)
			}
			cc := l.ChatConfig()
			if cc == nil || cc.SpecialTokens["eos_token"] == "" {
				t.Errorf("ChatConfig() = %+v, want the model's eos token", cc)
			}
		})
	}
}
