package sampler

import (
	"errors"
	"fmt"
	"math"
)

// Params are a request's sampling and stopping parameters. The zero value
// is greedy decoding with no penalties (TopP 0 means 1).
type Params struct {
	Temperature       float64           // [0, 2]; 0 = greedy
	TopP              float64           // (0, 1]; 0 means 1 (off)
	TopK              int               // 0 = off, else [1, vocab]
	MinP              float64           // [0, 1]
	RepetitionPenalty float64           // (0, 2]; 0 means 1 (off)
	PresencePenalty   float64           // [-2, 2]
	FrequencyPenalty  float64           // [-2, 2]
	LogitBias         map[int32]float64 // token → bias in [-100, 100]
	Seed              *uint64           // nil: a random seed
	MaxTokens         int               // ≥ 0; 0 = up to the context length
	Stop              []string          // at most 16, non-empty
	StopTokenIDs      []int32
	IgnoreEOS         bool
	Logprobs          int // [0, 20] top entries reported per token
	// Constraint, when set, limits each draw to the tokens it allows
	// (constrained decoding). It has state: one request each.
	Constraint Constraint
}

// ErrEmptyPrompt is returned for a request without prompt tokens.
var ErrEmptyPrompt = errors.New("sampler: empty prompt")

// FieldError names a parameter outside its range.
type FieldError struct {
	Field string // the JSON name, as in the OpenAI API
	Value any
	Range string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("sampler: %s = %v is out of range %s", e.Field, e.Value, e.Range)
}

// Validate checks every field; vocab is the model's vocabulary size.
func (p *Params) Validate(vocab int) error {
	bad := func(field string, v any, rng string) error { return &FieldError{Field: field, Value: v, Range: rng} }
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !finite(p.Temperature) || p.Temperature < 0 || p.Temperature > 2:
		return bad("temperature", p.Temperature, "[0, 2]")
	case !finite(p.TopP) || p.TopP < 0 || p.TopP > 1:
		return bad("top_p", p.TopP, "(0, 1]")
	case p.TopK < 0 || p.TopK > vocab:
		return bad("top_k", p.TopK, fmt.Sprintf("0 (off) or [1, %d]", vocab))
	case !finite(p.MinP) || p.MinP < 0 || p.MinP > 1:
		return bad("min_p", p.MinP, "[0, 1]")
	case !finite(p.RepetitionPenalty) || p.RepetitionPenalty < 0 || p.RepetitionPenalty > 2:
		return bad("repetition_penalty", p.RepetitionPenalty, "(0, 2]")
	case !finite(p.PresencePenalty) || p.PresencePenalty < -2 || p.PresencePenalty > 2:
		return bad("presence_penalty", p.PresencePenalty, "[-2, 2]")
	case !finite(p.FrequencyPenalty) || p.FrequencyPenalty < -2 || p.FrequencyPenalty > 2:
		return bad("frequency_penalty", p.FrequencyPenalty, "[-2, 2]")
	case p.MaxTokens < 0:
		return bad("max_tokens", p.MaxTokens, "≥ 0")
	case len(p.Stop) > 16:
		return bad("stop", len(p.Stop), "at most 16 strings")
	case p.Logprobs < 0 || p.Logprobs > 20:
		return bad("logprobs", p.Logprobs, "[0, 20]")
	}
	for _, s := range p.Stop {
		if s == "" {
			return bad("stop", `""`, "non-empty strings")
		}
	}
	for _, id := range p.StopTokenIDs {
		if id < 0 || int(id) >= vocab {
			return bad("stop_token_ids", id, fmt.Sprintf("[0, %d)", vocab))
		}
	}
	for id, b := range p.LogitBias {
		if id < 0 || int(id) >= vocab {
			return bad("logit_bias", id, fmt.Sprintf("token ids in [0, %d)", vocab))
		}
		if !finite(b) || b < -100 || b > 100 {
			return bad("logit_bias", b, "[-100, 100]")
		}
	}
	return nil
}
