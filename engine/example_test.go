package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/internal/testmodel"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// The tiny test model has random weights, so its text means nothing; on
// kernels.CPURef its tokens are the same on every machine.
const tinyPath = "../testdata/models/qwen2-tiny"

// longPath is tinyPath with 1024 positions (TestMain writes it): the
// Hermes tool prompt is longer than the tiny model's 256.
var longPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vkllm-engine-test")
	if err != nil {
		log.Fatal(err)
	}
	longPath = dir
	if err := testmodel.WriteLongContext(tinyPath, longPath, 1024); err != nil {
		log.Fatal(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Generate runs prompts as concurrent requests and returns their results
// in input order. The zero sampler.Params is greedy decoding.
func ExampleLLM_Generate() {
	llm, err := engine.Open(context.Background(), tinyPath, engine.Options{Backend: kernels.CPURef})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()

	res, err := llm.Generate(context.Background(), []string{"Hello", "Once upon a time"}, sampler.Params{MaxTokens: 8})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Println(len(r.Tokens), r.FinishReason, r.Usage.CompletionTokens)
	}
	// Output:
	// 8 length 8
	// 8 length 8
}

// Stream yields a request's output as it comes; breaking out of the loop,
// or cancelling ctx, aborts the request.
func ExampleLLM_Stream() {
	llm, err := engine.Open(context.Background(), tinyPath, engine.Options{Backend: kernels.CPURef})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()

	n := 0
	for d, err := range llm.Stream(context.Background(), "Once upon a time", sampler.Params{MaxTokens: 6}) {
		if err != nil {
			log.Fatal(err)
		}
		n += len(d.NewTokens) // d.TextDelta holds their text, whole UTF-8 characters only
		if d.Finished {
			fmt.Println(n, "tokens, finish reason", d.FinishReason)
		}
	}
	// Output: 6 tokens, finish reason length
}

// WithChoices asks one Stream for several samples of one prompt: the
// prompt is computed once, choice i draws with Seed+i, and each Delta
// carries its choice's Index.
func ExampleWithChoices() {
	llm, err := engine.Open(context.Background(), tinyPath, engine.Options{Backend: kernels.CPURef})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()

	seed := uint64(1)
	p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 5, IgnoreEOS: true}
	tokens := make([][]int32, 3)
	for d, err := range llm.Stream(context.Background(), "Once upon a time", p, engine.WithChoices(3)) {
		if err != nil {
			log.Fatal(err)
		}
		tokens[d.Index] = append(tokens[d.Index], d.NewTokens...)
	}
	fmt.Println(llm.Stats().PromptTokens, "prompt tokens queued")
	for i, t := range tokens {
		fmt.Println("choice", i, len(t), "tokens")
	}
	// Output:
	// 14 prompt tokens queued
	// choice 0 5 tokens
	// choice 1 5 tokens
	// choice 2 5 tokens
}

// StreamTokens yields a request's tokens as they are drawn; the last Delta
// has Finished set. These are transformers' greedy tokens after this
// prompt (testdata/models/qwen2-tiny.golden.json).
func ExampleLLM_StreamTokens() {
	llm, err := engine.Open(context.Background(), tinyPath, engine.Options{Backend: kernels.CPURef})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()

	prompt := []int32{17, 200, 33, 41, 5, 99, 250}
	var toks []int32
	for d, err := range llm.StreamTokens(context.Background(), prompt, sampler.Params{MaxTokens: 10}) {
		if err != nil {
			log.Fatal(err)
		}
		toks = append(toks, d.NewTokens...)
		if d.Finished {
			fmt.Println(d.FinishReason, d.Usage.PromptTokens, d.Usage.CompletionTokens)
		}
	}
	fmt.Println(toks)
	// Output:
	// length 7 10
	// [140 140 140 140 140 140 140 140 294 294]
}

// A Session keeps the conversation's K/V between turns. The second turn's
// prompt is the whole conversation (4 + 4 tokens so far, 3 new); 7 of them
// are found in the cache (Usage.CachedTokens), so it computes only the 3
// new ones and the first turn's last reply token, which was drawn but never
// run. With a chat template, SendChat takes messages instead of text.
func ExampleSession() {
	llm, err := engine.Open(context.Background(), tinyPath, engine.Options{Backend: kernels.CPURef})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()
	s := llm.NewSession()
	defer s.Close()

	p := sampler.Params{MaxTokens: 4}
	for _, text := range []string{"Hello", " and then"} {
		var reply strings.Builder
		for d, err := range s.Send(context.Background(), text, p) {
			if err != nil {
				log.Fatal(err)
			}
			reply.WriteString(d.TextDelta)
			if d.Finished {
				fmt.Println("prompt", d.Usage.PromptTokens, "cached", d.Usage.CachedTokens, "reply", d.Usage.CompletionTokens)
			}
		}
	}
	fmt.Println("conversation:", len(s.Tokens()), "tokens")
	// Output:
	// prompt 4 cached 0 reply 4
	// prompt 11 cached 7 reply 4
	// conversation: 15 tokens
}

// An Engine is the loop under LLM, for a caller that owns the goroutine:
// Add queues requests, each Step schedules them, runs one forward pass and
// reports what every request drew. Without a tokenizer it deals in token
// ids only. Both requests get transformers' greedy tokens
// (testdata/models/qwen2-tiny.golden.json).
func ExampleEngine() {
	m, err := models.Open(context.Background(), tinyPath, models.WithBackendName(kernels.CPURef, kernels.Options{}))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	// 4 sequence ids: by default half for running requests, half for
	// retained ones (cached prefixes, idle sessions)
	ctx, err := m.NewContext(models.ContextParams{ContextLen: 256, MaxSeqs: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	e, err := engine.New(m, ctx, nil, engine.Config{})
	if err != nil {
		log.Fatal(err)
	}

	prompts := map[string][]int32{"a": {5}, "b": {17, 200, 33, 41, 5, 99, 250}}
	for _, id := range []string{"a", "b"} {
		if err := e.Add(engine.Request{ID: id, Prompt: prompts[id], Params: sampler.Params{MaxTokens: 3}}); err != nil {
			log.Fatal(err)
		}
	}
	got := map[string][]int32{}
	for e.HasUnfinished() {
		outs, err := e.Step() // both requests share each step's forward pass
		if err != nil {
			log.Fatal(err)
		}
		for _, o := range outs {
			got[o.ID] = append(got[o.ID], o.NewTokens...)
		}
	}
	fmt.Println(got["a"], got["b"])
	// Output: [102 294 294] [140 140 140]
}

// A ChatRequest with tools gets them described to the model (by its
// template, or in the Hermes format when the template knows none) and
// the reply's calls parsed; ToolChoice "required" (or a function's name)
// makes the reply one call even from a model that never calls tools, as
// this random one, with arguments that follow the tool's parameters
// schema.
func ExampleLLM_Chat_tools() {
	llm, err := engine.Open(context.Background(), longPath, engine.Options{Backend: kernels.CPURef})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()

	weather := chat.Tool{Type: "function", Function: chat.ToolFunction{Name: "get_weather",
		Parameters: json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
			"required": ["city"], "additionalProperties": false}`)}}
	res, err := llm.Chat(context.Background(), engine.ChatRequest{
		Messages:   []chat.Message{{Role: "user", Content: "Weather in Paris?"}},
		Tools:      []chat.Tool{weather},
		ToolChoice: engine.ToolRequired,
	}, sampler.Params{MaxTokens: 100})
	if err != nil {
		log.Fatal(err)
	}
	call := res.ToolCalls[0]
	var args map[string]any
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.FinishReason, call.Function.Name, call.Function.Arguments)
	// Output: tool_calls get_weather {"city":"ǜǜǜǜǜǜǜǜǜǜǜǜ"}
}
