// Command tokenize prints the token ids of the text on stdin.
//
//	go run ./examples/tokenize --model PATH [--add-special] [--json] < text.txt
//	go run ./examples/tokenize --model PATH --chat FILE.json
//
// PATH is a folder holding tokenizer.json (and maybe tokenizer_config.json),
// a tokenizer.json file, or a .gguf file. The ids are printed space-separated
// on one line, or as {"ids":[…]} with --json. --add-special adds the
// special tokens the tokenizer's post-processor adds (e.g. Llama's BOS).
//
// With --chat, FILE.json holds an OpenAI-style request ({"messages": […],
// "tools": […], "chat_template_kwargs": {…}}) or a bare messages list; the
// model's chat template (ChatML if it has none) renders it and the prompt is
// printed exactly, nothing added.
//
// On an error it prints one line, "error: …", to stderr and exits 1.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/vkllm/vkllm/tokenizer"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "folder with tokenizer.json, a tokenizer.json, or a .gguf file")
	addSpecial := fs.Bool("add-special", false, "add the post-processor's special tokens (BOS…)")
	asJSON := fs.Bool("json", false, `print {"ids":[…]}`)
	chatFile := fs.String("chat", "", "render this chat request (JSON) with the model's template and print the prompt")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *model == "" {
		fmt.Fprintln(stderr, "error: --model PATH is required")
		return 2
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
	tok, err := load(*model)
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
func load(path string) (*tokenizer.Tokenizer, error) {
	if strings.HasSuffix(strings.ToLower(path), ".gguf") {
		return loadGGUF(path)
	}
	return tokenizer.FromFile(path)
}
