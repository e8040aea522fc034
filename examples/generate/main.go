// Command generate runs greedy generation on a model folder or GGUF file.
//
//	go run ./examples/generate --model PATH (--prompt TEXT | --tokens 1,2,3)
//	    [--max-tokens N] [--temperature 0] [--top-logprobs K] [--json]
//
// Greedy decoding only (temperature 0); sampling comes with the engine.
// --json prints one object:
//
//	{"prompt_tokens":[…],"tokens":[…],"text":"…","top_logprobs":[[{"id":N,"logprob":F},…],…]}
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// Result is what --json prints.
type Result struct {
	PromptTokens []int32             `json:"prompt_tokens"`
	Tokens       []int32             `json:"tokens"`
	Text         string              `json:"text"`
	TopLogprobs  [][]sampler.Logprob `json:"top_logprobs"`
}

type config struct {
	model, prompt, tokens string
	maxTokens, topK       int
	temperature           float64
	json, ignoreEOS       bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "error: internal error: %v\n", r)
			code = 1
		}
	}()
	var c config
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.model, "model", "", "model folder or .gguf file")
	fs.StringVar(&c.prompt, "prompt", "", "prompt text")
	fs.StringVar(&c.tokens, "tokens", "", "prompt as comma-separated token ids")
	fs.IntVar(&c.maxTokens, "max-tokens", 32, "tokens to generate")
	fs.Float64Var(&c.temperature, "temperature", 0, "only 0 (greedy) for now")
	fs.IntVar(&c.topK, "top-logprobs", 0, "report the K most likely tokens per step (0-20)")
	fs.BoolVar(&c.json, "json", false, "print one JSON object")
	fs.BoolVar(&c.ignoreEOS, "ignore-eos", false, "do not stop at an end-of-sequence token")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := generate(ctx, c, stdout); err != nil {
		fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	return 0
}

func generate(ctx context.Context, c config, stdout io.Writer) error {
	switch {
	case c.model == "":
		return errors.New("--model is required")
	case (c.prompt == "") == (c.tokens == ""):
		return errors.New("give exactly one of --prompt and --tokens")
	case c.temperature != 0:
		return errors.New("--temperature: only 0 (greedy) is supported until the sampler lands")
	case c.maxTokens < 1:
		return fmt.Errorf("--max-tokens must be ≥ 1, got %d", c.maxTokens)
	case c.topK < 0 || c.topK > 20:
		return fmt.Errorf("--top-logprobs must be in [0, 20], got %d", c.topK)
	}
	m, err := models.Open(c.model)
	if err != nil {
		return err
	}
	defer m.Close()
	tok, err := newTextCodec(m)
	if err != nil {
		if c.prompt != "" {
			return err
		}
		tok = nil // --tokens still works; text is left out
	}
	var prompt []int32
	if c.tokens != "" {
		if prompt, err = parseIDs(c.tokens); err != nil {
			return err
		}
	} else if prompt, err = tok.Encode(c.prompt); err != nil {
		return err
	}
	if len(prompt) == 0 {
		return errors.New("the prompt is empty")
	}
	cfg := m.Config
	n := len(prompt) + c.maxTokens
	if n > cfg.MaxPositions {
		return fmt.Errorf("prompt (%d) + max tokens (%d) exceed the model's %d positions", len(prompt), c.maxTokens, cfg.MaxPositions)
	}
	mctx, err := m.NewContext(models.ContextParams{ContextLen: n, MaxSeqs: 1})
	if err != nil {
		return err
	}
	defer mctx.Close()

	res := Result{PromptTokens: prompt, Tokens: []int32{}, TopLogprobs: [][]sampler.Logprob{}}
	logits, err := mctx.Prefill(0, prompt)
	if err != nil {
		return err
	}
	var stream *textStream
	if !c.json && tok != nil {
		stream = tok.stream(stdout)
	}
	for step := 0; step < c.maxTokens; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		next, top := greedy(logits, c.topK)
		res.Tokens = append(res.Tokens, next)
		if c.topK > 0 {
			res.TopLogprobs = append(res.TopLogprobs, top)
		}
		if stream != nil {
			stream.add(next)
		}
		if !c.ignoreEOS && isEOS(cfg.EOS, next) {
			break
		}
		if step+1 == c.maxTokens {
			break
		}
		if logits, err = mctx.DecodeToken(0, next); err != nil {
			return err
		}
	}
	if tok != nil {
		res.Text, _ = tok.Decode(res.Tokens)
	}
	if c.json {
		return json.NewEncoder(stdout).Encode(res)
	}
	if stream != nil {
		stream.flush()
		fmt.Fprintln(stdout)
	} else {
		fmt.Fprintln(stdout, joinIDs(res.Tokens))
	}
	return nil
}

// greedy returns the argmax (first on ties) and the top-k log-probabilities.
func greedy(logits []float32, k int) (int32, []sampler.Logprob) {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	return int32(best), sampler.TopLogprobs(logits, k)
}

func isEOS(eos []int32, t int32) bool {
	for _, e := range eos {
		if e == t {
			return true
		}
	}
	return false
}

func parseIDs(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--tokens: %q is not a token id", f)
		}
		out = append(out, int32(v))
	}
	return out, nil
}

func joinIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}
