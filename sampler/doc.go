// Package sampler turns one row of logits into the next token.
//
// A caller makes a Sampler per sequence with New(params, prompt), checks
// params first with Params.Validate, and at each step calls Sample on
// the step's logits row (Accept for a token it chose otherwise; Dist,
// Verify and Choose for speculative decoding).
//
// Params holds what an OpenAI-style request may ask for; Validate checks
// every field against its range and returns a *FieldError naming it. A
// Sampler applies, in vLLM's order: logit bias, repetition penalty (over
// prompt and output tokens), frequency and presence penalties (over output
// tokens), then temperature, top-k, top-p and min-p, and finally draws from
// the remaining distribution with its own seeded generator. Temperature 0
// is greedy: the largest adjusted logit, the first on ties.
//
// A Params.Constraint masks the tokens a grammar forbids before the
// draw (see Constraint); package sampler/grammar has the grammars (JSON
// Schema, regex patterns, forced tool calls).
//
// The draw is defined on the whole vocabulary sorted by scaled logit,
// descending, ties by smaller id: softmax in float64 (normalised over the
// top-k window, or the whole vocabulary), then the tail trimmed of zero
// probabilities and of min-p, then the top-p cut at the first token where
// the cumulative probability reaches top_p, and one uniform number from
// the seeded generator walked down the kept probabilities. A Sampler
// computes that draw without sorting the vocabulary and without an
// exponential per token: top-k selects its window with a bounded heap;
// otherwise one pass buckets every token by distance to the max (1/16 nat
// wide) and estimates the normaliser within 1e-10 (a table and a cubic
// per token instead of math.Exp), and only the leading buckets are sorted
// and weighed, as far as the cut or the drawn token. When the estimate does
// not settle the top-p cut or the drawn token (a boundary within 1e-10),
// every token is weighed and the draw is the full sort's arithmetic, in
// its order. Elsewhere the kept tokens are drawn by their weights
// exp(x−max) rather than by their probabilities: the same draw up to
// rounding, so a token can differ from a full sort's only when the
// uniform number falls within a few ulps of a boundary. The selection
// buffers live in the Sampler: after its first call a draw allocates
// nothing. A row with a NaN or +Inf, or
// without a finite logit, has no distribution; it gives the greedy choice
// (still taking one random number).
//
// TopLogprobs keeps the k best tokens in a sorted list of k (ties: the
// smaller id first), without sorting the vocabulary.
//
// A Sampler belongs to one sequence; it is not safe for concurrent use.
// The same seed and the same logits give the same tokens.
package sampler
