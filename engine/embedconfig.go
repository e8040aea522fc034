package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/models"
)

// ErrPooling: the model declares a pooling (or a sentence-transformers
// module) that vkllm does not compute; pass EmbedOptions.Pooling to
// choose one.
var ErrPooling = errcode.New(errcode.BadParams, "engine: unsupported pooling")

// EmbedConfig is what a model says about its embeddings.
type EmbedConfig struct {
	// Pooling is the model's: sentence-transformers' pooling module in a
	// folder (modules.json, 1_Pooling/config.json), a GGUF file's
	// <arch>.pooling_type, else PoolLast.
	Pooling Pooling
	// From names where Pooling came from ("" for the default).
	From string
	// Size is the vector's length: the model's hidden size.
	Size int
	// MaxTokens is the most tokens one input may hold (LLM.EmbedConfig
	// sets it: the context of one request).
	MaxTokens int
	// Err is why the model's pooling cannot be used (ErrPooling), nil
	// when it can; an explicit EmbedOptions.Pooling does not need it.
	Err error
}

// readEmbedConfig reads m's embedding configuration (EmbedConfig). A file
// that is there but unreadable or malformed is an error.
func readEmbedConfig(m *models.Model) (EmbedConfig, error) {
	c := EmbedConfig{Pooling: PoolLast, Size: m.Config.HiddenSize}
	f := m.Files
	if f == nil {
		return c, nil
	}
	if f.GGUF != nil {
		arch, _ := f.GGUF.String("general.architecture")
		key := arch + ".pooling_type"
		// llama.cpp's enum llama_pooling_type: 0 none (a generative
		// model: the default), 1 mean, 2 cls, 3 last, 4 rank.
		if v, ok := f.GGUF.Int(key); ok && v != 0 {
			c.From = key
			switch v {
			case 1:
				c.Pooling = PoolMean
			case 3:
				c.Pooling = PoolLast
			default:
				c.Err = fmt.Errorf("%w: %s = %d (vkllm pools the mean (1) or the last token (3))", ErrPooling, key, v)
			}
		}
		return c, nil
	}
	p, from, err := readSTPooling(f.Path)
	switch {
	case errors.Is(err, ErrPooling):
		c.Err, c.From = err, from
	case err != nil:
		return c, err
	case from != "":
		c.Pooling, c.From = p, from
	}
	return c, nil
}

// Sentence-transformers' module types vkllm applies: the transformer (the
// model itself), its pooling, and L2 normalisation.
const (
	stTransformer = "sentence_transformers.models.Transformer"
	stPooling     = "sentence_transformers.models.Pooling"
	stNormalize   = "sentence_transformers.models.Normalize"
)

// readSTPooling reads the pooling of a sentence-transformers folder: the
// Pooling module that modules.json lists (or 1_Pooling/ when there is no
// modules.json) and its config.json, which sets one pooling_mode_* true.
// from is the config file read, "" when the folder has none. A module
// vkllm does not apply (a Dense layer) or a mode other than mean and
// last token is an error wrapping ErrPooling.
func readSTPooling(dir string) (p Pooling, from string, err error) {
	poolDir := "1_Pooling"
	mpath := filepath.Join(dir, "modules.json")
	raw, err := os.ReadFile(mpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, "", fmt.Errorf("engine: %w", err)
	default:
		var mods []struct{ Path, Type string }
		if err := json.Unmarshal(raw, &mods); err != nil {
			return 0, "", fmt.Errorf("engine: %s: %w", mpath, err)
		}
		poolDir = ""
		for _, m := range mods {
			switch m.Type {
			case stPooling:
				poolDir = m.Path
			case stTransformer, stNormalize:
			default:
				return 0, mpath, fmt.Errorf("%w: %s lists module %q (%s), which vkllm does not apply", ErrPooling, mpath, m.Path, m.Type)
			}
		}
		if poolDir == "" {
			return 0, "", nil
		}
	}
	cpath := filepath.Join(dir, filepath.Clean("/" + poolDir)[1:], "config.json") // kept inside dir
	raw, err = os.ReadFile(cpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, "", nil
	case err != nil:
		return 0, "", fmt.Errorf("engine: %w", err)
	}
	var modes map[string]any
	if err := json.Unmarshal(raw, &modes); err != nil {
		return 0, "", fmt.Errorf("engine: %s: %w", cpath, err)
	}
	var on []string
	for k, v := range modes {
		if b, ok := v.(bool); ok && b && strings.HasPrefix(k, "pooling_mode_") {
			on = append(on, k)
		}
	}
	slices.Sort(on)
	if len(on) != 1 {
		return 0, cpath, fmt.Errorf("%w: %s sets %d pooling modes %v; vkllm computes exactly one", ErrPooling, cpath, len(on), on)
	}
	switch on[0] {
	case "pooling_mode_lasttoken":
		return PoolLast, cpath, nil
	case "pooling_mode_mean_tokens":
		return PoolMean, cpath, nil
	}
	return 0, cpath, fmt.Errorf("%w: %s: %s (vkllm pools the mean or the last token)", ErrPooling, cpath, on[0])
}
