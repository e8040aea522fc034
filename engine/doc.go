// Package engine serves many generation requests on one model Context with
// continuous batching, in nano-vllm's shape.
//
//	e, err := engine.New(m, ctx, tok, engine.Config{})  // m *models.Model, ctx a Context of m; tok may be nil
//	err = e.Add(engine.Request{ID: "a", Prompt: ids, Params: p})
//	for e.HasUnfinished() {
//		outs, err := e.Step()                          // schedule, run, postprocess
//		...                                            // outs: new tokens, text deltas, finish reasons
//	}
//
// Most callers use the LLM facade, safe for concurrent use:
//
//	l, err := engine.Open(ctx, "path/to/model", engine.Options{MaxSeqs: 16})
//	defer l.Close()
//	res, err := l.Generate(ctx, []string{"a", "b"}, params)  // []Result, input order
//	for d, err := range l.Stream(ctx, "prompt", params) { … } // Deltas; break or cancel aborts
//	vecs, err := l.Embed(ctx, []string{"a", "b"}, engine.EmbedOptions{}) // pooled, L2-normalised
//	s := l.NewSession()                                      // K/V kept between turns
//	for d, err := range s.SendChat(ctx, req, params) { … }
//
// Layout, one responsibility per file, one direction:
//
//	request.go    Request, the states of a request and their transition table
//	scheduler.go  pure logic: waiting and running queues; packs prefill
//	              chunks and decodes into one step under a token budget and
//	              a bound on running sequences; admits a request with the
//	              block manager and plans only its uncached tokens;
//	              preempts (recompute) the newest running request when the
//	              cache is short (after evicting retained sequences)
//	blocks.go     the block manager (nano-vllm's BlockManager): owns the
//	              sequence ids, a budget for running requests and one for
//	              retained sequences; match/allocate give a new request
//	              its session's sequence or shares (SeqCp) the whole
//	              blocks a retained prefix or a running request holds;
//	              deallocate retires a finished one into the pool; evicts
//	retain.go     the pool of retained sequences: cached prefixes found by
//	              block hashes, idle sessions by name; LRU order
//	runner.go     the only place that turns a schedule into a models.Batch:
//	              one Decode per step, logits per scheduled sequence
//	fanout.go     a request of N choices: the prompt is prefilled once,
//	              then each choice gets a sequence sharing its cells
//	              (SeqCp) and draws with its own seed
//	output.go     sampling results become Outputs: token ids, UTF-8 safe
//	              text deltas, stop strings and stop tokens, usage, logprobs
//	spec.go       speculative decoding: Speculation, the Proposer
//	              interface and NGram (prompt lookup), each request's
//	              adaptive draft length, the verification of a step's
//	              drafts (sampler.Verify) and the SeqRm of rejected cells
//	draft.go      the draft model: its own Context, one sequence per
//	              running request kept in step with the request's tokens;
//	              Options.Draft opens it and checks its vocabulary
//	engine.go     Engine: Add, Step, Abort, HasUnfinished
//	stats.go      Stats: load and counters for monitoring
//	llm.go        LLM: a model, a tokenizer, one Context and its Engine,
//	              owned by one goroutine fed through an inbox; Generate,
//	              Chat and the Stream calls
//	session.go    Session: a conversation whose K/V stays between turns
//	infcache.go   the inference cache: a repeated greedy or seeded
//	              request answered with the outputs of its first run, no
//	              forward pass; an LRU bounded by bytes (Options.CacheBytes)
//	tokenize.go   Tokenize, TokenizeChat, Detokenize, MaxLen: the tokens a
//	              request would run, for /tokenize
//	embed.go      embedding requests: a prompt-only sequence whose tokens
//	              ask Decode for their final hidden states (every token for
//	              mean pooling, which no cached prefix may skip; the last
//	              for last-token pooling); the step that computes its last
//	              token pools them, finishes it and frees its cells
//	pooling.go    the model's pooling: sentence-transformers' modules.json
//	              and 1_Pooling/config.json, or a GGUF's pooling_type
//	embed_llm.go  LLM.Embed and EmbedTokens: inputs checked, then queued
//	              at most MaxSeqs at a time beside the generations
//
// Sequences. A request's tokens are its prompt followed by its output;
// token i sits at position i of its own sequence id. numCached counts the
// leading tokens whose K/V are in the cache. A step processes, for each
// scheduled request, tokens[numCached : numCached+n]; when that reaches
// the end of its tokens the last one asks for logits and a token is
// sampled. A decode is the case n = 1, a (chunk of a) prefill n > 1.
//
// Choices. A Request of N > 1 choices is admitted when N sequence ids
// are free. Choice 0 prefills the prompt; in the step that computes the
// prompt's last token every other choice gets its own sequence sharing
// the prompt's cells and draws its first token from the same logits
// (with Seed+i). From then on the choices are independent sequences;
// Outputs carry their Index, each ends on its own, and Abort ends all.
//
// Speculation (Config.Speculation). Before a step each decoding request
// may draft k tokens; its chunk is then its last token and the drafts
// (k+1 tokens with logits on each) beside the other chunks, within the
// token budget and the free cells (drafts never evict or preempt). The
// sampler keeps the drafts it accepts and one more token; numCached
// becomes len(tokens)-1 and the cells of the rejected drafts are removed.
// Requests with a Constraint do not speculate.
//
// Preemption is by recompute: the victim's cells are freed, numCached
// drops to 0 and it waits at the front of the queue; when scheduled again
// it re-prefills prompt and output so far and goes on (its sampler keeps
// its state, so greedy and seeded outputs are unchanged).
//
// Retained sequences. A finished request's cells are kept when it belongs
// to a session (under the session's name) or, with prefix caching, as a
// cached prefix of whole BlockSize-token blocks. They hold sequence ids of
// their own (the Context's ids beyond Config.MaxSeqs), so running
// requests never push them out; when their budget is full the least
// recently used prefix gives way. A new request gets, when it is admitted,
// its session's sequence (cut where the tokens differ) or shares through
// SeqCp the most whole blocks that a cached prefix or a running request
// has computed; Usage.CachedTokens counts those tokens, and the step
// computes only the rest. Retained cells count as used but are evicted,
// prefixes first and least recently used first, before anything running
// is preempted. Cells may be shared, so the scheduler never assumes what a
// release frees: it asks the block manager.
package engine
