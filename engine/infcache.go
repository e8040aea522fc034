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
// An entry is stored compactly (compactOutputs: one array each of its
// Outputs, tokens, text, logprobs), and its bytes are what it holds on
// the Go heap, an upper bound counted as the allocator rounds each
// array, with the entry's fixed cost (its list element and map slots).
// Entries are evicted least recently used first when their bytes exceed
// the bound. TestInferenceCacheBytesMeasured compares the count with the
// heap a full cache holds. The outputs of a request still running are
// not counted: they are its caller's.

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
	deletes int        // from entries since it was made
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

// put stores a compact copy of outs under k, evicting the least recently
// used entries beyond the bound; outputs bigger than the whole bound are
// not kept.
func (c *inferenceCache) put(k cacheKey, outs []Output) {
	sh := shapeOf(outs)
	size := sh.bytes()
	if size > c.max {
		return
	}
	outs = compactOutputs(outs, sh)
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
		c.deletes++
	}
	if c.deletes >= len(c.entries) {
		// A Go map never shrinks, and its deleted slots make it grow:
		// rebuild it once as many entries left as it holds, so that it
		// stays within the slots per entry that mapEntryBytes counts.
		m := make(map[cacheKey]*list.Element, len(c.entries))
		maps.Copy(m, c.entries)
		c.entries, c.deletes = m, 0
	}
}

// stats are the cache's hits and bytes held.
func (c *inferenceCache) stats() (hits uint64, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.bytes
}

// What an entry holds on the Go heap, counted as the allocator rounds
// it: one array of Outputs, and one array each of their tokens, text,
// logprobs, alternatives and embeddings (compactOutputs), plus the
// entry's fixed cost.
const (
	// mapSlotBytes is a map slot (key and pointer) with its control
	// byte, as the groups of a full table of 1024 slots are allocated
	// (Go's swiss map: 8 slots and a control word per group).
	mapSlotBytes = ((8+8*(sha256.Size+8))*128 + 8 + 8191) &^ 8191 / 1024
	// mapEntryBytes is the map's share per entry: three slots. A map
	// holds up to 8/7 slots per entry when full, twice that after it
	// grows, and more as deleted slots make it grow; rebuilt after as
	// many deletes as entries (put), it was measured at 2.2-2.7 slots
	// per entry under churn (Go 1.26).
	mapEntryBytes = 3 * mapSlotBytes
)

// entryOverhead is an entry's fixed cost: the entry, its list element
// and its map slots.
var entryOverhead = allocBytes(int64(unsafe.Sizeof(cacheEntry{}))) + allocBytes(int64(unsafe.Sizeof(list.Element{}))) + mapEntryBytes

// entryShape counts what an entry's arrays hold.
type entryShape struct {
	outs, toks, text, lps, tops, embs int
	reasons                           int64 // bytes of finish reasons not interned
}

func shapeOf(outs []Output) entryShape {
	sh := entryShape{outs: len(outs)}
	for i := range outs {
		o := &outs[i]
		sh.toks += len(o.NewTokens)
		sh.text += len(o.TextDelta)
		sh.lps += len(o.Logprobs)
		for _, lp := range o.Logprobs {
			sh.tops += len(lp.Top)
		}
		sh.embs += len(o.Embedding)
		if internReason(o.FinishReason) == "" && o.FinishReason != "" {
			sh.reasons += allocBytes(int64(len(o.FinishReason)))
		}
	}
	return sh
}

// bytes is what compactOutputs holds on the heap for an entry of this
// shape, with the entry's fixed cost: an upper bound.
func (sh entryShape) bytes() int64 {
	n := func(count int, size uintptr) int64 { return allocBytes(int64(count) * int64(size)) }
	return entryOverhead + sh.reasons +
		n(sh.outs, unsafe.Sizeof(Output{})) + n(sh.toks, 4) + n(sh.text, 1) + n(sh.embs, 4) +
		n(sh.lps, unsafe.Sizeof(TokenLogprob{})) + n(sh.tops, unsafe.Sizeof(sampler.Logprob{}))
}

// entryBytes is the bytes an entry of outs holds.
func entryBytes(outs []Output) int64 { return shapeOf(outs).bytes() }

// compactOutputs copies outs, of shape sh, into one exact array of
// Outputs whose tokens, text, logprobs, alternatives and embeddings lie
// in one exact array each, so that the cache holds no slack capacity, no
// text the decoder held back, and no per-token allocations. IDs and
// Timing are dropped (a replay sets its own ID, and no Timing).
func compactOutputs(outs []Output, sh entryShape) []Output {
	tokA := make([]int32, 0, sh.toks)
	lpA := make([]TokenLogprob, 0, sh.lps)
	topA := make([]sampler.Logprob, 0, sh.tops)
	embA := make([]float32, 0, sh.embs)
	var sb strings.Builder
	sb.Grow(sh.text)
	for i := range outs {
		sb.WriteString(outs[i].TextDelta)
	}
	all := sb.String()
	out := make([]Output, len(outs))
	at := 0
	for i, o := range outs {
		o.ID, o.Timing = "", nil
		o.TextDelta, at = all[at:at+len(o.TextDelta)], at+len(o.TextDelta)
		if r := internReason(o.FinishReason); r != "" || o.FinishReason == "" {
			o.FinishReason = r
		} else {
			o.FinishReason = strings.Clone(o.FinishReason)
		}
		if o.NewTokens != nil {
			n := len(tokA)
			tokA = append(tokA, o.NewTokens...)
			o.NewTokens = tokA[n:len(tokA):len(tokA)]
		}
		if o.Embedding != nil {
			n := len(embA)
			embA = append(embA, o.Embedding...)
			o.Embedding = embA[n:len(embA):len(embA)]
		}
		if o.Logprobs != nil {
			n := len(lpA)
			for _, lp := range o.Logprobs {
				if lp.Top != nil {
					m := len(topA)
					topA = append(topA, lp.Top...)
					lp.Top = topA[m:len(topA):len(topA)]
				}
				lpA = append(lpA, lp)
			}
			o.Logprobs = lpA[n:len(lpA):len(lpA)]
		}
		out[i] = o
	}
	return out
}

// internReason is the engine's finish reason equal to r, a constant, or
// "" for another one.
func internReason(r string) string {
	switch r {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "abort":
		return "abort"
	}
	return ""
}

// sizeClasses are the Go allocator's small object sizes
// (internal/runtime/gc.SizeClassToSize, stable since Go 1.5; the
// measured test TestInferenceCacheBytesMeasured catches a change).
var sizeClasses = [...]int64{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocBytes is what the Go heap gives an allocation of n bytes: its size
// class, with the 8-byte header of an object over 512 bytes (counted for
// every such object, an upper bound), or whole 8 KiB pages for one over
// 32 KiB.
func allocBytes(n int64) int64 {
	if n <= 0 {
		return 0
	}
	if n > 512 {
		n += 8
	}
	if n > sizeClasses[len(sizeClasses)-1] {
		return (n + 8191) &^ 8191
	}
	i, _ := slices.BinarySearch(sizeClasses[:], n)
	return sizeClasses[i]
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
