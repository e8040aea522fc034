package engine_test

import (
	"context"
	"fmt"
	"log"
	"math"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/kernels"
)

// Embed pools each input's final hidden states into one vector (the last
// token's, unless the model's folder or EmbedOptions.Pooling says
// otherwise), of unit length by default. The inputs run beside any
// generation, in the same batches.
func ExampleLLM_Embed() {
	llm, err := engine.Open(context.Background(), tinyPath, engine.Options{Backend: kernels.CPURef})
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()

	vecs, err := llm.Embed(context.Background(), []string{"Hello", "Once upon a time"}, engine.EmbedOptions{Pooling: engine.PoolMean})
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range vecs {
		var dot float64
		for i := range v.Vector {
			dot += float64(v.Vector[i]) * float64(vecs[0].Vector[i])
		}
		fmt.Printf("%d values from %d tokens, cosine with the first %.2f\n", len(v.Vector), v.PromptTokens, math.Round(dot*100)/100)
	}
	// Output:
	// 64 values from 4 tokens, cosine with the first 1.00
	// 64 values from 14 tokens, cosine with the first -0.01
}
