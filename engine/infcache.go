package engine

import (
	"bufio"
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/vkllm/vkllm/sampler"
)

// The inference cache answers a request that repeats a finished one with
// the same outputs, without a forward pass. Only deterministic requests
// are kept: greedy (temperature 0) or seeded ones, with no session, no
// embedding, and either no Constraint or one named by WithConstraintKey.
// The key is a SHA-256 of the prompt tokens, every sampling parameter,
// the number of choices, the adapter and the constraint key; the value is
// the request's Outputs in the order they were delivered, replayed as
// they were (a stream gets the same deltas). A replayed request reports
// its whole prompt as cached (Usage.CachedTokens = PromptTokens), and
// its Outputs are marked Replayed, with no Timing.
//
// Entries are evicted least recently used first when their bytes (an
// estimate of what the Outputs hold) exceed the bound.

// DefaultCacheShare is the share of the machine's memory the inference
// cache may hold when Options.CacheBytes is 0.
const DefaultCacheShare = 0.05

// defaultCacheBytes is DefaultCacheShare of MemTotal (/proc/meminfo), or
// 64 MiB where that cannot be read.
func defaultCacheBytes() int64 {
	if total := memTotal(); total > 0 {
		return int64(float64(total) * DefaultCacheShare)
	}
	return 64 << 20
}

// memTotal is MemTotal of /proc/meminfo in bytes, 0 when unknown.
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// WithConstraintKey names the request's constraints (Params.Constraint
// or the choices' Constraints) for the inference cache: two requests
// whose constraints share a key must allow the same tokens after the
// same output. A request with a Constraint and no key is never answered
// from the cache nor stored in it.
func WithConstraintKey(key string) StreamOption {
	return func(r *Request) { r.constraintKey = key }
}

// cacheKey identifies a request's outputs.
type cacheKey [sha256.Size]byte

// inferenceCache is an LRU map from cacheKey to the Outputs of a
// finished request, bounded by their bytes. Safe for concurrent use.
type inferenceCache struct {
	max int64 // bytes

	mu      sync.Mutex
	bytes   int64
	order   *list.List // of *cacheEntry, most recent first
	entries map[cacheKey]*list.Element
	hits    uint64
}

type cacheEntry struct {
	key  cacheKey
	outs []Output
	size int64
}

func newInferenceCache(maxBytes int64) *inferenceCache {
	return &inferenceCache{max: maxBytes, order: list.New(), entries: map[cacheKey]*list.Element{}}
}

// keyOf is r's cache key; ok is false for a request the cache does not
// keep (sampled without a seed, a session, an embedding, or a Constraint
// without a key).
func keyOf(r *Request) (k cacheKey, ok bool) {
	p := r.Params
	switch {
	case r.Session != "" || r.Embed != nil:
		return k, false
	case p.Temperature != 0 && p.Seed == nil:
		return k, false
	case (p.Constraint != nil || r.Constraints != nil) && r.constraintKey == "":
		return k, false
	}
	h := sha256.New()
	var buf [8]byte
	u64 := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	f64 := func(v float64) { u64(math.Float64bits(v)) }
	str := func(s string) {
		u64(uint64(len(s)))
		h.Write([]byte(s))
	}
	u64(uint64(len(r.Prompt)))
	for _, t := range r.Prompt {
		u64(uint64(uint32(t)))
	}
	f64(p.Temperature)
	f64(p.TopP)
	u64(uint64(p.TopK))
	f64(p.MinP)
	f64(p.RepetitionPenalty)
	f64(p.PresencePenalty)
	f64(p.FrequencyPenalty)
	u64(uint64(len(p.LogitBias)))
	for _, id := range slices.Sorted(maps.Keys(p.LogitBias)) {
		u64(uint64(uint32(id)))
		f64(p.LogitBias[id])
	}
	if p.Seed != nil {
		u64(1)
		u64(*p.Seed)
	} else {
		u64(0)
	}
	u64(uint64(p.MaxTokens))
	u64(uint64(len(p.Stop)))
	for _, s := range p.Stop {
		str(s)
	}
	u64(uint64(len(p.StopTokenIDs)))
	for _, id := range p.StopTokenIDs {
		u64(uint64(uint32(id)))
	}
	if p.IgnoreEOS {
		u64(1)
	} else {
		u64(0)
	}
	u64(uint64(p.Logprobs))
	u64(uint64(max(r.N, 1)))
	str(r.Adapter)
	str(r.constraintKey)
	str(r.CacheScope)
	h.Sum(k[:0])
	return k, true
}

// get returns the outputs stored under k (nil when none), marking them
// recently used.
func (c *inferenceCache) get(k cacheKey) []Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.entries[k]
	if el == nil {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).outs
}

// hit counts a request answered from the cache.
func (c *inferenceCache) hit() {
	c.mu.Lock()
	c.hits++
	c.mu.Unlock()
}

// put stores outs under k, evicting the least recently used entries
// beyond the bound; outputs bigger than the whole bound are not kept.
func (c *inferenceCache) put(k cacheKey, outs []Output) {
	size := int64(len(k))
	for i := range outs {
		size += outputBytes(&outs[i])
	}
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el := c.entries[k]; el != nil { // a twin request finished first
		c.order.MoveToFront(el)
		return
	}
	c.entries[k] = c.order.PushFront(&cacheEntry{key: k, outs: outs, size: size})
	c.bytes += size
	for c.bytes > c.max {
		el := c.order.Back()
		e := el.Value.(*cacheEntry)
		c.order.Remove(el)
		delete(c.entries, e.key)
		c.bytes -= e.size
	}
}

// stats are the cache's hits and bytes held.
func (c *inferenceCache) stats() (hits uint64, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.bytes
}

// outputBytes estimates the memory o holds.
func outputBytes(o *Output) int64 {
	n := int64(unsafe.Sizeof(*o)) + int64(len(o.ID)+len(o.TextDelta)+len(o.FinishReason))
	n += int64(4*cap(o.NewTokens) + 4*cap(o.Embedding))
	for _, lp := range o.Logprobs {
		n += int64(unsafe.Sizeof(lp)) + int64(cap(lp.Top))*int64(unsafe.Sizeof(sampler.Logprob{}))
	}
	return n
}

// recording gathers a request's outputs for the cache as the loop
// delivers them (mailbox.put).
type recording struct {
	key  cacheKey
	outs []Output
}

// replay is a stored request's outputs as the request id gets them: its
// own ID, the whole prompt cached.
func replay(id string, outs []Output) []Output {
	out := make([]Output, len(outs))
	for i, o := range outs {
		o.ID, o.Replayed, o.Timing = id, true, nil
		if o.Usage.PromptTokens > 0 {
			o.Usage.CachedTokens = o.Usage.PromptTokens
		}
		out[i] = o
	}
	return out
}
