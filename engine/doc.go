// Package engine serves many generation requests on one model Context with
// continuous batching, in nano-vllm's shape.
//
//	e, err := engine.New(ctx, tok, engine.Config{})   // ctx: *models.Context, tok may be nil
//	err = e.Add(engine.Request{ID: "a", Prompt: ids, Params: p})
//	for e.HasUnfinished() {
//		outs, err := e.Step()                         // schedule, run, postprocess
//		...                                           // outs: new tokens, text deltas, finish reasons
//	}
//
// Most callers use the LLM facade, safe for concurrent use:
//
//	l, err := engine.Open("path/to/model", engine.Options{MaxSeqs: 16})
//	res, err := l.Generate(ctx, []string{"a", "b"}, params)  // []Result, input order
//	for d, err := range l.Stream(ctx, "prompt", params) { … } // Deltas; break or cancel aborts
//	l.Close()
//
// Layout, one responsibility per file, one direction:
//
//	request.go    Request, the states of a request and their transition table
//	scheduler.go  pure logic: waiting and running queues; packs prefill
//	              chunks and decodes into one step under a token budget and
//	              a bound on running sequences; preempts (recompute) the
//	              newest running request when the cache is short
//	runner.go     the only place that turns a schedule into a models.Batch:
//	              one Decode per step, logits per scheduled sequence; owns
//	              the free list of sequence ids [0, MaxSeqs)
//	output.go     sampling results become Outputs: token ids, UTF-8 safe
//	              text deltas, stop strings and stop tokens, usage, logprobs
//	engine.go     Engine: Add, Step, Abort, HasUnfinished
//	llm.go        LLM: a model, a Context, a tokenizer and one goroutine
//	              that owns the Engine; Generate and Stream for callers
//
// Sequences. A request's tokens are its prompt followed by its output;
// token i sits at position i of its own sequence id. numCached counts the
// leading tokens whose K/V are in the cache. A step processes, for each
// scheduled request, tokens[numCached : numCached+n]; when that reaches
// the end of its tokens the last one asks for logits and a token is
// sampled. A decode is the case n = 1, a (chunk of a) prefill n > 1.
//
// Preemption is by recompute: the victim's cells are freed, numCached
// drops to 0 and it waits at the front of the queue; when scheduled again
// it re-prefills prompt and output so far and goes on (its sampler keeps
// its state, so greedy and seeded outputs are unchanged).
//
// Not done yet: sessions that keep cells across turns and prefix reuse
// through SeqCp (Usage.CachedTokens is always 0).
package engine
