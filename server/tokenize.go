package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// Tokenizing is what /tokenize and /detokenize need of a model's
// generator; *engine.LLM is one.
type Tokenizing interface {
	MaxLen() int
	Tokenize(prompt string, addSpecial bool) ([]int32, error)
	TokenizeChat(req engine.ChatRequest, addGenerationPrompt bool) ([]int32, error)
	Detokenize(ids []int32) (string, error)
}

// tokenizeRequest is the body of POST /tokenize, vLLM's: a prompt, or
// messages rendered through the chat template.
type tokenizeRequest struct {
	Model               string                     `json:"model"`
	Prompt              *string                    `json:"prompt"`
	AddSpecialTokens    *bool                      `json:"add_special_tokens"`
	Messages            []chat.Message             `json:"messages"`
	AddGenerationPrompt *bool                      `json:"add_generation_prompt"`
	TemplateKwargs      map[string]json.RawMessage `json:"chat_template_kwargs"`
}

type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int32  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"` // always null: return_token_strs is not supported
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

// tokenizing is the model of a /tokenize or /detokenize request.
func (s *Server) tokenizing(name string) (Tokenizing, *apiError) {
	m, _, _, e := s.resolve(name)
	if e != nil {
		return nil, e
	}
	return m.Gen, nil
}

// handleTokenize is vLLM's POST /tokenize: {"model", "prompt",
// "add_special_tokens" (default true)} or {"model", "messages",
// "add_generation_prompt" (default true), "chat_template_kwargs"} →
// {"count", "max_model_len", "tokens", "token_strs": null}. The tokens
// are those /v1/completions or /v1/chat/completions would run.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request, body []byte) {
	var req tokenizeRequest
	if e := decodeBody(body, &req, s.messagesLimit()); e != nil {
		writeError(w, e)
		return
	}
	t, e := s.tokenizing(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	var ids []int32
	var err error
	param := "prompt"
	switch {
	case req.Prompt != nil && req.Messages != nil:
		e = badParam("messages", "give prompt or messages, not both")
	case req.Prompt != nil:
		if req.AddGenerationPrompt != nil {
			e = badParam("add_generation_prompt", "add_generation_prompt goes with messages")
			break
		}
		ids, err = t.Tokenize(*req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens)
	case req.Messages != nil:
		param = "messages"
		if len(req.Messages) == 0 {
			e = badParam("messages", "messages must not be empty")
			break
		}
		if req.AddSpecialTokens != nil && *req.AddSpecialTokens {
			e = badParam("add_special_tokens", "add_special_tokens goes with prompt: the chat template writes its own")
			break
		}
		creq := engine.ChatRequest{Messages: req.Messages, LiteralContent: s.cfg.LiteralContent}
		if len(req.TemplateKwargs) > 0 {
			creq.Kwargs = map[string]any{}
			for k, v := range req.TemplateKwargs {
				creq.Kwargs[k] = v
			}
		}
		ids, err = t.TokenizeChat(creq, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
	default:
		e = badParam("prompt", "prompt or messages is required")
	}
	if e == nil && err != nil {
		e = engineError(err, param, s.cfg.Logf)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	if ids == nil {
		ids = []int32{}
	}
	writeJSON(w, http.StatusOK, tokenizeResponse{Count: len(ids), MaxModelLen: t.MaxLen(), Tokens: ids})
}

// handleDetokenize is vLLM's POST /detokenize: {"model", "tokens"} →
// {"prompt"}, special tokens included.
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request, body []byte) {
	var req detokenizeRequest
	if e := decodeBody(body, &req); e != nil {
		writeError(w, e)
		return
	}
	t, e := s.tokenizing(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	if req.Tokens == nil {
		writeError(w, badParam("tokens", "tokens is required: an array of token ids"))
		return
	}
	text, err := t.Detokenize(req.Tokens)
	if err != nil {
		writeError(w, engineError(err, "tokens", s.cfg.Logf))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
}

// modelInfo is GET /v1/models/{id}: the model card with its context
// length (max_model_len, as vLLM's cards) and quantisation.
type modelInfo struct {
	modelCard
	Quantization string `json:"quantization,omitempty"`
}

// handleModel is GET /v1/models/{id}: the id of a loaded model as
// /v1/models lists it (NAME, NAME:QUANT or NAME:ADAPTER), else 404.
func (s *Server) handleModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	m, _, _, e := s.resolve(id)
	if e != nil {
		writeError(w, e)
		return
	}
	var at time.Time
	root := id
	for _, x := range s.entries {
		if x.m == m {
			at, root = x.at, x.spec.Name
			break
		}
	}
	info := modelInfo{modelCard: newModelCard(id, root, m, at), Quantization: m.Quant}
	writeJSON(w, http.StatusOK, info)
}
