package engine

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/sampler"
)

// recordAnswer delivers one finished request to cache through a mailbox,
// as the loop does: per token an Output with a one-token NewTokens, a
// text delta cut from a freshly concatenated string (emit's held text),
// optionally one TokenLogprob with k alternatives (TopLogprobs' k+1
// capacity), and per choice a final Output with Usage and Timing. The
// mailbox is dropped after, so only the cache keeps the outputs.
func recordAnswer(cache *inferenceCache, key cacheKey, id string, choices, tokens, logprobs int) {
	b := newMailbox(choices)
	b.rec, b.cache = &recording{key: key}, cache
	held := make([]string, choices)
	for t := range tokens {
		for c := range choices {
			piece := strings.Repeat("w", 1+(t*7+c)%9) // a token's text, 1-9 bytes
			held[c] += piece
			keep := min(len(held[c]), t%3) // a suffix that may begin a stop string
			o := Output{ID: id, Index: c, NewTokens: []int32{int32(t*31 + c)}, TextDelta: held[c][:len(held[c])-keep]}
			held[c] = held[c][len(held[c])-keep:]
			if logprobs > 0 {
				top := make([]sampler.Logprob, logprobs, logprobs+1)
				o.Logprobs = []TokenLogprob{{ID: int32(t), Logprob: -0.5, Top: top}}
			}
			b.put(o, nil)
		}
	}
	for c := range choices {
		b.put(Output{ID: id, Index: c, TextDelta: held[c], Finished: true, FinishReason: "length",
			Usage: Usage{PromptTokens: 40, CompletionTokens: tokens}, Timing: &Timing{}}, nil)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestInferenceCacheBytesMeasured fills a cache with realistic answers
// (short and long, with logprobs, several choices), until it evicts, and
// compares its byte count with the heap it holds: the count must be an
// upper bound of the heap, and within 25% of it.
func TestInferenceCacheBytesMeasured(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocations cost")
	}
	const bound = 8 << 20
	for _, c := range []struct {
		name                      string
		choices, tokens, logprobs int
		churn                     bool // first filled with one-token answers: the map had many more entries
	}{
		{"one token", 1, 1, 0, false},
		{"short", 1, 12, 0, false},
		{"long", 1, 700, 0, false},
		{"logprobs", 1, 120, 5, false},
		{"choices", 3, 60, 0, false},
		{"choices logprobs", 2, 300, 20, false},
		{"long after short", 1, 700, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := heapInUse()
			cache := newInferenceCache(bound)
			i := 0
			for ; c.churn && cache.order.Len() == i; i++ {
				recordAnswer(cache, cacheKey{byte(i), byte(i >> 8), byte(i >> 16)}, "chatcmpl-x", 1, 1, 0)
			}
			for n := 1; ; i, n = i+1, n+1 {
				recordAnswer(cache, cacheKey{byte(i), byte(i >> 8), byte(i >> 16)}, fmt.Sprintf("chatcmpl-%d", i), c.choices, c.tokens, c.logprobs)
				if _, b := cache.stats(); b > bound*9/10 && n > 2*cache.order.Len() {
					break // full, and it has evicted as many as it holds
				}
			}
			grown := heapInUse() - before
			_, counted := cache.stats()
			runtime.KeepAlive(cache)
			t.Logf("%d entries: counted %d B, heap grew %d B (%.2f×)", cache.order.Len(), counted, grown, float64(grown)/float64(counted))
			const slack = 64 << 10 // the test's own allocations
			if grown > counted+slack {
				t.Errorf("the cache counts %d bytes but holds %d (%.2f×): not an upper bound", counted, grown, float64(grown)/float64(counted))
			}
			if float64(counted) > 1.25*float64(grown)+slack {
				t.Errorf("the cache counts %d bytes for %d held: more than 25%% over", counted, grown)
			}
		})
	}
}

// TestInferenceCacheCompact: a stored answer replays the outputs it was
// given (but their IDs and Timing), and appending to a replayed slice
// cannot write into the next output's.
func TestInferenceCacheCompact(t *testing.T) {
	outs := []Output{
		{ID: "a", NewTokens: []int32{1, 2}, TextDelta: "he", Logprobs: []TokenLogprob{{ID: 1, Logprob: -1, Top: []sampler.Logprob{{ID: 1, Logprob: -1}}}, {ID: 2, Logprob: -2}}},
		{ID: "a", Index: 1, NewTokens: []int32{3}, TextDelta: "llo"},
		{ID: "a", Finished: true, FinishReason: "tool_calls", Usage: Usage{PromptTokens: 3, CompletionTokens: 3}, Timing: &Timing{Queue: 1}},
		{ID: "a", Index: 1, Embedding: []float32{0.5}, Finished: true, FinishReason: "length"},
	}
	got := compactOutputs(outs, shapeOf(outs))
	for i := range outs {
		want := outs[i]
		want.ID, want.Timing = "", nil
		if g := fmt.Sprintf("%+v", got[i]); g != fmt.Sprintf("%+v", want) {
			t.Errorf("output %d: %s, want %+v", i, g, want)
		}
	}
	_ = append(got[0].NewTokens, 9)
	_ = append(got[0].Logprobs, TokenLogprob{ID: 9})
	if got[1].NewTokens[0] != 3 || got[0].Logprobs[1].ID != 2 {
		t.Error("an append to a stored output wrote into another")
	}
}
