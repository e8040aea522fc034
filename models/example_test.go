package models_test

import (
	"context"
	"fmt"
	"log"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/models"
)

// Open a model, make a context with its own KV cache, run one batch (a
// prompt of sequence 0) and read the logits of its last token. The tiny
// test model has random weights; on kernels.CPURef its logits are
// transformers' (testdata/models/qwen2-tiny.golden.json), whose greedy
// pick after this prompt is token 140.
func Example() {
	m, err := models.Open(context.Background(), "../testdata/models/qwen2-tiny", models.WithBackendName(kernels.CPURef, kernels.Options{}))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx, err := m.NewContext(models.ContextParams{ContextLen: 256, MaxSeqs: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close() // before m.Close: a Model is not closed under its Contexts

	prompt := []int32{17, 200, 33, 41, 5, 99, 250}
	var b models.Batch
	for i, tok := range prompt {
		b.Add(tok, int32(i), i == len(prompt)-1, 0) // token, position, logits?, sequence
	}
	if err := ctx.Decode(b); err != nil {
		log.Fatal(err)
	}
	logits := ctx.Logits(len(prompt) - 1) // (vocab)
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	fmt.Println("vocab:", len(logits), "next token:", best)
	// Output: vocab: 320 next token: 140
}
