// Package engine serves many generation requests on one model with
// continuous batching, in nano-vllm's shape: an LLM facade, safe for
// concurrent use, over an Engine core.
//
//	l, err := engine.Open(ctx, "path/to/model", engine.Options{MaxSeqs: 16}) // a backend imported, e.g. _ "…/kernels/cpu"
//	defer l.Close()
//	res, err := l.Chat(ctx, engine.ChatRequest{Messages: msgs, Tools: tools}, params) // res.Text, res.ToolCalls
//	for d, err := range l.StreamChat(ctx, req, params) { … } // Deltas; break or cancel aborts
//	res, err := l.Generate(ctx, []string{"a", "b"}, params)  // []Result, input order
//	for d, err := range l.Stream(ctx, "prompt", params) { … }
//	vecs, err := l.Embed(ctx, []string{"a", "b"}, engine.EmbedOptions{}) // pooled, L2-normalised
//	s := l.NewSession()                                      // K/V kept between turns
//	for d, err := range s.SendChat(ctx, req, params) { … }
//
// A chat request is planned in one place, chatplan.go, for every caller
// (Chat, StreamChat, Session.SendChat, RenderChat, TokenizeChat and the
// HTTP server): its messages and tool choice are checked, the tools are
// described to the model (by its template, or in the Hermes format), the
// prompt is rendered, and each choice gets its constraint (a forced
// call's grammar or the response format's schema, sampler/grammar) and
// its tool-call parser; the typed errors (*RoleError, *ContentError, ErrToolChoice,
// *ToolSchemaError, ErrResponseFormat, ErrNoToolCall) say what was wrong.
//
// The facade (LLM, Session, the loop that owns the Engine and the
// callers' mailboxes, the inference cache, the planner, and what it opens
// from Options and the model's files: the draft model, the pooling) sits
// on the core, which knows nothing of chat and can be driven directly:
//
//	e, err := engine.New(m, mctx, tok, engine.Config{})  // m *models.Model, mctx a Context of m; tok may be nil
//	err = e.Add(engine.Request{ID: "a", Prompt: ids, Params: p})
//	for e.HasUnfinished() {
//		outs, err := e.Step()                          // schedule, run, postprocess
//		...                                            // outs: new tokens, text deltas, finish reasons
//	}
//
// The core is Engine (Add, Step, Abort), its scheduler (waiting and
// running queues, a token budget per step, preemption), block manager
// (sequence ids, shared and retained blocks), runner (the only place a
// schedule becomes a models.Batch), choices, speculative decoding and
// embeddings; internal/layering keeps its files free of tokenizer/chat and
// sampler/grammar, and under 2.5k lines.
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
