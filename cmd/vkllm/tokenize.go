package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vkllm/vkllm/tensor/gguf"
	"github.com/vkllm/vkllm/tokenizer"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// tokenize is `vkllm tokenize`: the token ids of the text on stdin.
//
// --model is a folder holding tokenizer.json (and maybe
// tokenizer_config.json), a tokenizer.json file, or a .gguf file, or a
// Hub name (pulled first, as run's --model). The ids
// are printed space-separated on one line, or as {"ids":[…]} with --json.
// --add-special adds the special tokens the tokenizer's post-processor
// adds (e.g. Llama's BOS).
//
// With --chat, FILE.json holds an OpenAI-style request ({"messages": […],
// "tools": […], "chat_template_kwargs": {…}}) or a bare messages list; the
// model's chat template (ChatML if it has none) renders it and the prompt
// is printed exactly, nothing added.
func tokenize(ctx context.Context, e env, args []string) int {
	stdin, stdout, stderr := e.stdin, e.stdout, e.stderr
	fs := newFlags(e, "tokenize")
	model := fs.String("model", "", "folder with tokenizer.json, a tokenizer.json, or a .gguf file, or a Hub name hf://OWNER/REPO[:QUANT|/FILE] (pulled first)")
	addSpecial := fs.Bool("add-special", false, "add the post-processor's special tokens (BOS…)")
	asJSON := fs.Bool("json", false, `print {"ids":[…]}`)
	chatFile := fs.String("chat", "", "render this chat request (JSON) with the model's template and print the prompt")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *model == "" {
		fmt.Fprintln(stderr, "error: --model PATH is required")
		return 2
	}
	pctx, cancel := e.interruptible(ctx)
	err := resolvePaths(pctx, stderr, flagPath{"--model", model})
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	if *chatFile != "" {
		prompt, err := renderChat(*model, *chatFile)
		if err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
		io.WriteString(stdout, prompt)
		return 0
	}
	tok, err := loadTokenizer(*model)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	text, err := io.ReadAll(stdin)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	ids, err := tok.Encode(string(text), *addSpecial)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	if *asJSON {
		if ids == nil {
			ids = []int32{}
		}
		b, _ := json.Marshal(struct {
			IDs []int32 `json:"ids"`
		}{ids})
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	fmt.Fprintln(stdout, strings.Join(parts, " "))
	return 0
}

// load opens a tokenizer from a folder, a tokenizer.json or a .gguf file.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	if strings.HasSuffix(strings.ToLower(path), ".gguf") {
		return loadGGUF(path)
	}
	return tokenizer.FromFile(path)
}

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

// loadGGUF reads the tokenizer stored in a GGUF file's metadata.
func loadGGUF(path string) (*tokenizer.Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return tokenizer.FromGGUF(f)
}
