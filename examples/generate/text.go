package main

import (
	"errors"
	"io"

	"github.com/vkllm/vkllm/models"
)

// textCodec turns text into tokens and back. It is nil until the model's
// tokenizer can be loaded.
type textCodec struct{}

var errNoTokenizer = errors.New("--prompt needs the tokenizer, which is not available yet; use --tokens")

func newTextCodec(m *models.Model) (*textCodec, error) { return nil, errNoTokenizer }

func (t *textCodec) Encode(s string) ([]int32, error) { return nil, errNoTokenizer }
func (t *textCodec) Decode(ids []int32) (string, error) {
	return "", errNoTokenizer
}

type textStream struct{}

func (t *textCodec) stream(w io.Writer) *textStream { return nil }
func (s *textStream) add(id int32)                  {}
func (s *textStream) flush()                        {}
