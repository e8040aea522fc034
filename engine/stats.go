package engine

import "slices"

// Stats is a snapshot of an engine's load and counters, for monitoring
// (the server exports it under vLLM's metric names). Counters only grow.
type Stats struct {
	Running int // sequences running (prefilling or decoding): requests, or their choices
	Waiting int // requests (or choices) queued or preempted

	KVCells int // cells in the KV cache(s)
	KVUsed  int // cells holding K/V, cached prefixes and idle sessions included
	// KVRetained counts the cells of KVUsed that only retained sequences
	// (cached prefixes, idle sessions) hold: evicting them would free
	// them, so they are not in use in KVUsage's sense.
	KVRetained int

	PromptTokens uint64 // prompt tokens of the requests added
	// ComputedTokens counts the tokens run through the model: prompt
	// tokens not found in the cache, recomputed ones, and each drawn
	// token that was fed back.
	ComputedTokens   uint64
	GenerationTokens uint64 // tokens drawn
	Preemptions      uint64 // requests preempted (recomputed later)
	// PrefixQueries counts the prompt tokens looked up in the prefix
	// cache, PrefixHits those found there (vLLM's token-based counters).
	PrefixQueries uint64
	PrefixHits    uint64
	// DraftTokens counts the draft tokens scored (speculative decoding),
	// DraftAccepted those kept (vLLM's spec_decode counters).
	DraftTokens   uint64
	DraftAccepted uint64
	// InferenceCacheHits counts the requests the inference cache
	// answered (no forward pass; LLM.Stats only), InferenceCacheBytes is
	// the heap its entries hold (an upper bound; Options.CacheBytes).
	InferenceCacheHits  uint64
	InferenceCacheBytes int64
	// Finished counts finished requests by finish reason ("stop",
	// "length", "abort").
	Finished map[string]uint64
	// RunningAdapters and WaitingAdapters name the LoRA adapters of the
	// running and of the waiting sequences, each once, sorted.
	RunningAdapters, WaitingAdapters []string
}

// KVUsage is the fraction of KV cells that cannot be reused without
// eviction (those of running requests), in [0, 1], as vLLM's
// kv_cache_usage_perc: an idle engine reports 0 however much it keeps.
func (s Stats) KVUsage() float64 {
	if s.KVCells == 0 {
		return 0
	}
	return float64(s.KVUsed-s.KVRetained) / float64(s.KVCells)
}

// KVRetainedUsage is the fraction of KV cells that only retained
// sequences hold (cached prefixes, idle sessions), in [0, 1].
func (s Stats) KVRetainedUsage() float64 {
	if s.KVCells == 0 {
		return 0
	}
	return float64(s.KVRetained) / float64(s.KVCells)
}

// counters are the Engine's running totals.
type counters struct {
	promptTokens, generationTokens, preemptions uint64
	computedTokens                              uint64
	prefixQueries, prefixHits                   uint64
	draftTokens, draftAccepted                  uint64
	finished                                    map[string]uint64
}

// Stats reports the engine's load and counters now.
func (e *Engine) Stats() Stats {
	s := Stats{Running: len(e.sched.running), Waiting: len(e.sched.waiting),
		KVCells: e.ctx.Params().ContextLen, KVUsed: e.ctx.Used(), KVRetained: e.blocks.retainedOnly(),
		PromptTokens: e.count.promptTokens, ComputedTokens: e.count.computedTokens, GenerationTokens: e.count.generationTokens,
		Preemptions: e.count.preemptions, PrefixQueries: e.count.prefixQueries, PrefixHits: e.count.prefixHits,
		DraftTokens: e.count.draftTokens, DraftAccepted: e.count.draftAccepted,
		Finished: make(map[string]uint64, len(e.count.finished))}
	for k, v := range e.count.finished {
		s.Finished[k] = v
	}
	s.RunningAdapters, s.WaitingAdapters = adapterNames(e.sched.running), adapterNames(e.sched.waiting)
	return s
}

// adapterNames lists the adapters of qs, each once, sorted; nil for none.
func adapterNames(qs []*sequence) []string {
	var names []string
	for _, q := range qs {
		if q.adapterName != "" && !slices.Contains(names, q.adapterName) {
			names = append(names, q.adapterName)
		}
	}
	slices.Sort(names)
	return names
}
