package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"

	"github.com/vkllm/vkllm/engine"
)

// MaxEmbeddingInputs bounds the inputs of one /v1/embeddings request
// (OpenAI's limit).
const MaxEmbeddingInputs = 2048

// Embedder is what POST /v1/embeddings needs of a model's Generator; a
// model without embeddings returns errors.ErrUnsupported (answered 400).
type Embedder interface {
	EmbedConfig() (engine.EmbedConfig, error)
	Embed(ctx context.Context, inputs []string, opts engine.EmbedOptions) ([]engine.Embedding, error)
	EmbedTokens(ctx context.Context, inputs [][]int32, opts engine.EmbedOptions) ([]engine.Embedding, error)
}

// embeddingRequest is the body of POST /v1/embeddings.
type embeddingRequest struct {
	Model string `json:"model"`
	// Input is a string, an array of strings, an array of token ids or
	// an array of arrays of token ids.
	Input json.RawMessage `json:"input"`
	// EncodingFormat is "float" (default) or "base64" (the float32
	// values, little-endian, in standard base64).
	EncodingFormat string `json:"encoding_format"`
	// Dimensions is refused unless it is the model's own length: no model
	// here is trained for shortened (Matryoshka) embeddings.
	Dimensions *int   `json:"dimensions"`
	User       string `json:"user"`
	// Normalize (vLLM's extension) turns the L2 normalisation off when
	// false.
	Normalize *bool `json:"normalize"`
}

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  embeddingUsage  `json:"usage"`
}

// embeddingInputs is a parsed "input": texts or token id lists.
type embeddingInputs struct {
	texts []string
	ids   [][]int32
}

// ignore is a JSON value that is scanned (and so checked) but not kept.
type ignore struct{}

func (*ignore) UnmarshalJSON([]byte) error { return nil }

// countElements returns the elements of the JSON array raw, scanning them
// without keeping any, and stops after limit+1.
func countElements(raw json.RawMessage, limit int) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '['
		return 0, err
	}
	n := 0
	for dec.More() && n <= limit {
		var v ignore
		if err := dec.Decode(&v); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// parseEmbeddingInput reads "input" (embeddingRequest.Input). An array of
// more than MaxEmbeddingInputs texts or lists, or of more than maxTokens
// token ids, is refused after scanning that many elements: a huge one
// costs no more memory than its body.
func parseEmbeddingInput(raw json.RawMessage, maxTokens int) (embeddingInputs, *apiError) {
	var in embeddingInputs
	wrong := badParam("input", "input must be a non-empty string, array of strings, array of token ids or array of arrays of token ids")
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return in, badParam("input", "input is required")
	}
	var one string
	if raw[0] == '"' {
		if json.Unmarshal(raw, &one) != nil {
			return in, wrong
		}
		in.texts = []string{one}
		return in, nil
	}
	if raw[0] != '[' {
		return in, wrong
	}
	// The first element says which array this is; only that type is decoded.
	switch first := bytes.TrimSpace(raw[1:]); {
	case len(first) == 0 || first[0] == ']':
		return in, badParam("input", "input is an empty array")
	case first[0] == '-' || first[0] >= '0' && first[0] <= '9':
		if n, err := countElements(raw, maxTokens); err == nil && n > maxTokens {
			return in, badParam("input", "input: more than %d token ids, the most one input may hold", maxTokens)
		}
		var ids []int32
		if json.Unmarshal(raw, &ids) != nil {
			return in, badParam("input", "input: an array of token ids must hold integers in [0, 2³¹) only")
		}
		in.ids = [][]int32{ids}
		return in, nil
	case first[0] != '"' && first[0] != '[':
		return in, wrong
	}
	n, err := countElements(raw, MaxEmbeddingInputs)
	switch {
	case err != nil:
		return in, wrong
	case n > MaxEmbeddingInputs:
		return in, badParam("input", "at most %d inputs per request", MaxEmbeddingInputs)
	}
	if bytes.TrimSpace(raw[1:])[0] == '"' {
		if json.Unmarshal(raw, &in.texts) != nil {
			return embeddingInputs{}, wrong
		}
		return in, nil
	}
	if json.Unmarshal(raw, &in.ids) != nil {
		return embeddingInputs{}, badParam("input", "input: arrays of token ids must hold integers in [0, 2³¹) only")
	}
	return in, nil
}

// embeddingError maps the errors of an Embed call to their answer.
func embeddingError(err error, logf func(string, ...any)) *apiError {
	switch {
	case errors.Is(err, engine.ErrDimensions):
		return badParam("dimensions", "%v", err)
	case errors.Is(err, engine.ErrPooling), errors.Is(err, engine.ErrBadEmbed):
		return badParam("model", "%v", err)
	}
	return engineError(err, "input", logf)
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request, body []byte) {
	var req embeddingRequest
	if e := decodeBody(body, &req); e != nil {
		writeError(w, e)
		return
	}
	m, _, e := s.lookup(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	s.note(r, req.Model, req.Input)
	emb := m.Gen
	cfg, err := emb.EmbedConfig()
	if errors.Is(err, errors.ErrUnsupported) {
		writeError(w, badParam("model", "the model %q does not serve embeddings", req.Model))
		return
	}
	if err != nil {
		writeError(w, embeddingError(err, s.cfg.Logf))
		return
	}
	in, e := parseEmbeddingInput(req.Input, cfg.MaxTokens)
	if e != nil {
		writeError(w, e)
		return
	}
	opts := engine.EmbedOptions{NoNormalize: req.Normalize != nil && !*req.Normalize}
	switch {
	case req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64":
		e = badParam("encoding_format", `encoding_format must be "float" or "base64", got %q`, req.EncodingFormat)
	case req.Dimensions != nil && *req.Dimensions < 1:
		e = badParam("dimensions", "dimensions must be ≥ 1, got %d", *req.Dimensions)
	case req.Dimensions != nil:
		opts.Dimensions = *req.Dimensions
	}
	if e != nil {
		writeError(w, e)
		return
	}
	var vecs []engine.Embedding
	if in.ids != nil {
		vecs, err = emb.EmbedTokens(r.Context(), in.ids, opts)
	} else {
		vecs, err = emb.Embed(r.Context(), in.texts, opts)
	}
	if err != nil {
		if r.Context().Err() != nil {
			return // the client went away: nothing to answer, no internal error
		}
		writeError(w, embeddingError(err, s.cfg.Logf))
		return
	}
	resp := embeddingResponse{Object: "list", Model: req.Model, Data: make([]embeddingData, len(vecs))}
	for i, v := range vecs {
		d := embeddingData{Object: "embedding", Index: i, Embedding: v.Vector}
		if req.EncodingFormat == "base64" {
			d.Embedding = encodeFloats(v.Vector)
		}
		resp.Data[i] = d
		resp.Usage.PromptTokens += v.PromptTokens
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	infoOf(r.Context()).addPromptTokens(resp.Usage.PromptTokens)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// encodeFloats is v as little-endian float32 bytes in standard base64,
// as OpenAI's encoding_format "base64".
func encodeFloats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
