package server

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestRequestMetrics: vLLM's per-request histograms (prompt and
// generation tokens, queue, prefill and decode time) are exported, and
// a reply from the inference cache counts in the end-to-end latency and
// the token counts but never in TTFT, ITL, TPOT or the phases.
func TestRequestMetrics(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.waitLoaded()
	c := ts.client()
	params := openai.ChatCompletionNewParams{Model: "tiny", Messages: user("hi"), MaxTokens: openai.Int(4), Temperature: openai.Float(0)}
	var prompt int64
	for range 2 { // the second is an inference-cache hit
		resp, err := c.Chat.Completions.New(context.Background(), params, option.WithJSONSet("ignore_eos", true))
		if err != nil {
			t.Fatal(err)
		}
		prompt = resp.Usage.PromptTokens
	}
	ts.settle()
	_, _, b := ts.do("GET", "/metrics", "", "")
	body := string(b)
	for _, want := range []string{
		`vllm:e2e_request_latency_seconds_count{model_name="tiny"} 2`,
		`vllm:request_prompt_tokens_count{model_name="tiny"} 2`,
		`vllm:request_prompt_tokens_sum{model_name="tiny"} ` + itoa(uint64(2*prompt)),
		`vllm:request_generation_tokens_count{model_name="tiny"} 2`,
		`vllm:request_generation_tokens_sum{model_name="tiny"} 8`,
		`vllm:time_to_first_token_seconds_count{model_name="tiny"} 1`,
		`vllm:inter_token_latency_seconds_count{model_name="tiny"} 3`,
		`vllm:time_per_output_token_seconds_count{model_name="tiny"} 1`,
		`vllm:request_queue_time_seconds_count{model_name="tiny"} 1`,
		`vllm:request_prefill_time_seconds_count{model_name="tiny"} 1`,
		`vllm:request_decode_time_seconds_count{model_name="tiny"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}
