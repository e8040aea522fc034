package server

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/vkllm/vkllm/engine"
)

// OpenModel opens a model with engine.Open (cancelling ctx stops the load)
// and wraps it with NewModel.
func OpenModel(ctx context.Context, path string, opts engine.Options) (*Model, error) {
	l, err := engine.Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	return NewModel(l, path), nil
}

// NewModel is the Model of an open LLM: its quantisation is the GGUF's
// file type, else the one written at the end of path's name. The Model
// owns l from then on.
func NewModel(l *engine.LLM, path string) *Model {
	m := &Model{Gen: l, Quant: l.FileType(), Adapters: l.Adapters()}
	if m.Quant == "" {
		m.Quant = quantFromName(path)
	}
	return m
}

var quantRe = regexp.MustCompile(`(?i)[.\-_]((?:I?Q\d(?:_[A-Z0-9]+)*)|BF16|F16|F32)(?:\.gguf)?$`)

// quantFromName is the quantisation written at the end of a file name
// ("SmolLM2-135M-Instruct.Q4_1.gguf" → "Q4_1"), "" when none is.
func quantFromName(path string) string {
	m := quantRe.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return ""
	}
	return strings.ToUpper(m[1])
}

// lookup finds the model of a request: "NAME" (the first file registered
// under it) or "NAME:QUANT" (the file of that quantisation).
func (s *Server) lookup(name string) (*Model, string, *apiError) {
	if name == "" {
		return nil, "", badParam("model", "model is required")
	}
	base, quant, hasQuant := strings.Cut(name, ":")
	var found *entry
	known := false
	for _, e := range s.entries {
		if e.spec.Name != base {
			continue
		}
		known = true
		if !hasQuant {
			found = e
			break
		}
		select {
		case <-e.ready:
			if e.m != nil && strings.EqualFold(e.m.Quant, quant) {
				found = e
			}
		default:
		}
		if found != nil {
			break
		}
	}
	if found == nil && known && hasQuant {
		// Maybe a model under that name is still loading and is the one.
		for _, e := range s.entries {
			if e.spec.Name == base && !isReady(e) {
				return nil, "", loadingError(name)
			}
		}
	}
	if found == nil {
		e := newError(http.StatusNotFound, "invalid_request_error", "model_not_found", "the model %q does not exist; GET /v1/models lists them", name)
		e.Param = strp("model")
		return nil, "", e
	}
	if !isReady(found) {
		return nil, "", loadingError(name)
	}
	if found.err != nil {
		e := newError(http.StatusServiceUnavailable, "server_error", "model_unavailable", "the model %q failed to load; the server log says why", name)
		return nil, "", e
	}
	return found.m, s.label(found), nil
}

// label names an entry in metrics and /health by its API name: NAME,
// as requests name it, when it is the only file of that name, else
// NAME:QUANT, with "#k" added when several files would have the same
// label.
func (s *Server) label(e *entry) string {
	shared := 0
	for _, x := range s.entries {
		if x.spec.Name == e.spec.Name {
			shared++
		}
	}
	base := func(x *entry) string {
		if shared > 1 && isReady(x) && x.m != nil && x.m.Quant != "" { // x.m is written by the loader until ready closes
			return x.spec.Name + ":" + x.m.Quant
		}
		return x.spec.Name
	}
	l, k := base(e), 0
	for _, x := range s.entries {
		if base(x) == l {
			k++
		}
		if x == e {
			break
		}
	}
	if k > 1 {
		l += fmt.Sprintf("#%d", k)
	}
	return l
}

func isReady(e *entry) bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

func loadingError(name string) *apiError {
	e := newError(http.StatusServiceUnavailable, "server_error", "model_loading", "the model %q is still loading; retry shortly", name)
	e.RetryAfter = 2
	return e
}

// modelCard is an entry of GET /v1/models. MaxModelLen is the most
// tokens one request may hold, prompt and completion together (vLLM's
// max_model_len); it is left out when the model's Generator does not say.
// Root is the NAME the model was served under, so that NAME and
// NAME:QUANT read as one model; Parent, as vLLM's LoRA cards, is the
// NAME a NAME:ADAPTER applies to.
type modelCard struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	Parent      string `json:"parent,omitempty"`
	MaxModelLen int    `json:"max_model_len,omitempty"`
}

// newModelCard is the card of model m, served as root, listed as id and
// loaded at at.
func newModelCard(id, root string, m *Model, at time.Time) modelCard {
	c := modelCard{ID: id, Object: "model", Created: at.Unix(), OwnedBy: "vkllm", Root: root}
	if a, ok := strings.CutPrefix(id, root+":"); ok && slices.Contains(m.Adapters, a) {
		c.Parent = root
	}
	c.MaxModelLen = m.Gen.MaxLen()
	return c
}

// handleModels lists the loaded models: NAME for each name, NAME:QUANT
// for each file whose quantisation is known and NAME:ADAPTER for each
// LoRA adapter.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	list := []modelCard{}
	seen := map[string]bool{}
	add := func(id string, e *entry) {
		if !seen[id] {
			seen[id] = true
			list = append(list, newModelCard(id, e.spec.Name, e.m, e.at))
		}
	}
	for _, e := range s.entries {
		if !isReady(e) || e.m == nil {
			continue
		}
		add(e.spec.Name, e)
		if e.m.Quant != "" {
			add(e.spec.Name+":"+e.m.Quant, e)
		}
		for _, a := range e.m.Adapters {
			add(e.spec.Name+":"+a, e)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": list})
}

// loadedModels are the models loaded so far, in registration order.
func (s *Server) loadedModels() []namedModel {
	var out []namedModel
	for _, e := range s.entries {
		if isReady(e) && e.m != nil {
			out = append(out, namedModel{s.label(e), e.m})
		}
	}
	return out
}

type namedModel struct {
	name string
	m    *Model
}

// ClearCache frees the retained K/V (cached prefixes, idle sessions) of
// the named model, when its generator keeps any.
func (s *Server) ClearCache(name string) error {
	for _, e := range s.entries {
		if e.spec.Name == name && isReady(e) && e.m != nil {
			return e.m.Gen.ClearCache()
		}
	}
	return nil
}

// Stats is the engine.Stats of the first loaded file registered under name
// (zero when none is loaded).
func (s *Server) Stats(name string) engine.Stats {
	for _, e := range s.entries {
		if e.spec.Name == name && isReady(e) && e.m != nil {
			return e.m.Gen.Stats()
		}
	}
	return engine.Stats{}
}
