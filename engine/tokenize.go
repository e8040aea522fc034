package engine

import (
	"fmt"
)

// MaxLen is the most tokens one request may hold, prompt and output
// (vLLM's max_model_len): min(Options.ContextLen, the model's positions).
func (l *LLM) MaxLen() int { return l.maxLen }

// Tokenize is the token ids Stream runs for prompt (with addSpecial, the
// tokenizer's BOS and the like, as Stream adds them). A prompt longer
// than a request may hold is refused with ErrPromptTooLong before it is
// tokenised in full.
func (l *LLM) Tokenize(prompt string, addSpecial bool) ([]int32, error) {
	return l.encode(prompt, addSpecial, nil)
}

// TokenizeChat is the token ids StreamChat runs for req: the
// conversation rendered through the chat template, with the generation
// prompt when addGenerationPrompt is set (StreamChat always adds it), and
// tokenised without special tokens of the tokenizer's own. Its errors are
// RenderChat's and Tokenize's.
func (l *LLM) TokenizeChat(req ChatRequest, addGenerationPrompt bool) ([]int32, error) {
	p, err := l.prompt(req, addGenerationPrompt)
	if err != nil {
		return nil, err
	}
	return l.encode(p.text, false, p.literal)
}

// Detokenize is the text of ids, special tokens included (as vLLM's
// /detokenize). An id outside the vocabulary is refused with
// ErrBadToken; an empty list is the empty text, as vLLM's.
func (l *LLM) Detokenize(ids []int32) (string, error) {
	if n := len(ids); n > l.maxLen {
		return "", promptTooLong(n, l.maxLen)
	}
	if l.tok == nil {
		return "", ErrNoTokenizer
	}
	if len(ids) == 0 {
		return "", nil
	}
	vocab := l.tok.VocabSize()
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			return "", fmt.Errorf("%w: %d at %d (vocabulary %d)", ErrBadToken, id, i, vocab)
		}
	}
	return l.tok.Decode(ids, false)
}
