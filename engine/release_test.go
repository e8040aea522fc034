package engine

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// TestEndedRequestsReleased: once the requests of many choices have
// ended (finished or aborted, having waited for sequences), the engine
// that ran them holds none of their samplers: their memory goes back
// to the heap while the engine lives on.
func TestEndedRequestsReleased(t *testing.T) {
	e, _ := newEngine(t, models.ContextParams{ContextLen: 256, MaxSeqs: 8}, Config{})
	var collected atomic.Int32
	total := 0
	seed := uint64(3)
	p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 2, IgnoreEOS: true}
	r := rand.New(rand.NewPCG(1, 2))
	const requests, n = 12, 4 // three times what the sequences hold: most wait
	for i := range requests {
		id := fmt.Sprint("r", i)
		if err := e.Add(Request{ID: id, Prompt: prompt(r, 20), Params: p, N: n}); err != nil {
			t.Fatal(err)
		}
		for _, q := range e.byID[id].choices() {
			runtime.AddCleanup(q.post.sampler, func(*atomic.Int32) { collected.Add(1) }, &collected)
			total++
		}
	}
	for i := range 4 { // a few steps, then some requests end early
		if _, err := e.Step(); err != nil {
			t.Fatal(err)
		}
		e.Abort(fmt.Sprint("r", 3*i+2))
	}
	drainChoices(t, e)
	deadline := time.Now().Add(5 * time.Second)
	for collected.Load() < int32(total) && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := collected.Load(); got != int32(total) {
		t.Fatalf("%d of %d samplers still held by the engine after their requests ended", int32(total)-got, total)
	}
	runtime.KeepAlive(e)
}
