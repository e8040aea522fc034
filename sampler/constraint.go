package sampler

// Constraint limits the tokens a Sampler may draw, one step at a time:
// grammar-constrained decoding (a tool call, a JSON object), as the
// token masks of llama.cpp's grammars or vLLM's guided decoding.
//
// The Sampler asks Allow before each draw and calls Accept with the token
// drawn. Forbidden tokens get logit -Inf after logit bias and penalties,
// before temperature, top-k, top-p and min-p; logprobs stay those of the
// raw logits. When a step allows no token at all, the Sampler draws as if
// there were no Constraint (the constraint has nothing to say).
//
// A Constraint has state: it belongs to one request (one sequence), like
// its Sampler, and is called from one goroutine at a time.
type Constraint interface {
	// Allow sets allowed[id] for each token id that may come next;
	// allowed has one entry per vocabulary id, all false on entry.
	Allow(allowed []bool)
	// Accept advances past token id, the one drawn.
	Accept(id int32)
}
