package main

import (
	"io"

	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/tokenizer"
)

// textCodec turns text into tokens and back with the model's tokenizer:
// tokenizer.json of a folder, or the vocabulary of a GGUF file.
type textCodec struct{ t *tokenizer.Tokenizer }

func newTextCodec(m *models.Model) (*textCodec, error) {
	var t *tokenizer.Tokenizer
	var err error
	if g := m.Files.GGUF; g != nil {
		t, err = tokenizer.FromGGUF(g)
	} else {
		t, err = tokenizer.FromFile(m.Files.TokenizerPath)
	}
	if err != nil {
		return nil, err
	}
	return &textCodec{t}, nil
}

// Encode tokenizes a prompt with the special tokens the tokenizer adds
// (a BOS for Llama-style models).
func (c *textCodec) Encode(s string) ([]int32, error) { return c.t.Encode(s, true) }

// Decode is the text of ids without special tokens.
func (c *textCodec) Decode(ids []int32) (string, error) { return c.t.Decode(ids, true) }

// textStream writes text to w as tokens arrive, whole characters only.
type textStream struct {
	w io.Writer
	d *tokenizer.StreamDecoder
}

func (c *textCodec) stream(w io.Writer) *textStream { return &textStream{w, c.t.NewDecoder()} }
func (s *textStream) add(id int32)                  { io.WriteString(s.w, s.d.Add(id)) }
func (s *textStream) flush()                        { io.WriteString(s.w, s.d.Flush()) }
