// Package sampler turns one row of logits into the next token.
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
// draw (see Constraint).
//
// A Sampler belongs to one sequence; it is not safe for concurrent use.
// The same seed and the same logits give the same tokens.
package sampler
