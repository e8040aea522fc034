package models

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
	"github.com/vkllm/vkllm/tensor/safetensors"
)

// Format names the container a model was read from.
type Format string

const (
	FormatSafetensors Format = "safetensors"
	FormatGGUF        Format = "gguf"
)

// Files is a model's configuration and opened weight files, before any
// weight is given to a backend. Close it when done.
type Files struct {
	Path   string // the folder or .gguf file given
	Format Format
	Arch   *Arch
	Config *Config
	// Weights are views into the mapped files.
	Weights tensor.Source
	// WeightPaths are the weight files opened; Size is their total size.
	WeightPaths []string
	Size        int64
	// GGUF is the parsed GGUF file (metadata, vocabulary), nil for a folder.
	GGUF *gguf.File
	// TokenizerPath is the folder's tokenizer.json ("" for GGUF).
	TokenizerPath string
}

// Close releases the weight mappings.
func (f *Files) Close() error {
	if f.Weights == nil {
		return nil
	}
	err := f.Weights.Close()
	f.Weights = nil
	return err
}

// OpenFiles opens a HF model folder or a .gguf file: it reads and checks the
// configuration first (an unsupported architecture fails before any weight
// file is opened), then maps the weights and validates their headers.
//
// A folder needs config.json and tokenizer.json; its weights are one
// *.safetensors.index.json with its shards, or exactly one *.safetensors.
// Several *.safetensors without an index is an *AmbiguousError. A split
// GGUF (llama.cpp's gguf-split: NAME-00001-of-0000N.gguf …) opens from
// its first shard, the others beside it.
func OpenFiles(path string) (*Files, error) {
	if strings.HasPrefix(path, "hf://") { // the library reaches no network: package hub pulls
		return nil, &NotFoundError{Path: path, What: "model (a Hugging Face Hub name: pull it first, with hub.Resolve or `vkllm pull`)"}
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &NotFoundError{Path: path, What: "model"}
		}
		return nil, fmt.Errorf("models: %w", err)
	}
	if st.IsDir() {
		return openFolder(path)
	}
	if strings.EqualFold(filepath.Ext(path), ".gguf") {
		return openGGUF(path, st.Size())
	}
	return nil, &NotFoundError{Path: path, What: "model (a folder with config.json or a .gguf file)"}
}

func openFolder(dir string) (*Files, error) {
	need := func(name string) (string, error) {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", &NotFoundError{Path: p, What: name}
			}
			return "", fmt.Errorf("models: %w", err)
		}
		return p, nil
	}
	cfgPath, err := need("config.json")
	if err != nil {
		return nil, err
	}
	tokPath, err := need("tokenizer.json")
	if err != nil {
		return nil, err
	}
	data, err := readLimited(cfgPath, maxConfigBytes)
	if err != nil {
		return nil, err
	}
	cfg, err := ParseConfig(data, cfgPath)
	if err != nil {
		return nil, err
	}
	indexes, _ := filepath.Glob(filepath.Join(dir, "*.safetensors.index.json"))
	singles, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	sort.Strings(indexes)
	sort.Strings(singles)
	f := &Files{Path: dir, Format: FormatSafetensors, Arch: archs[cfg.Arch], Config: cfg, TokenizerPath: tokPath}
	switch {
	case len(indexes) > 1:
		return nil, &AmbiguousError{Dir: dir, Files: base(indexes)}
	case len(indexes) == 1:
		sh, err := safetensors.OpenIndex(indexes[0])
		if err != nil {
			return nil, err
		}
		f.Weights = sh
		f.WeightPaths = sh.Paths()
	case len(singles) == 1:
		sf, err := safetensors.Open(singles[0])
		if err != nil {
			return nil, err
		}
		f.Weights = sf
		f.WeightPaths = singles
	case len(singles) == 0:
		return nil, &NotFoundError{Path: dir, What: "weights (*.safetensors or *.safetensors.index.json)"}
	default:
		return nil, &AmbiguousError{Dir: dir, Files: base(singles)}
	}
	for _, p := range f.WeightPaths {
		if st, err := os.Stat(p); err == nil {
			f.Size += st.Size()
		}
	}
	return f, nil
}

func openGGUF(path string, size int64) (*Files, error) {
	g, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	if no, _ := g.Int("split.no"); no != 0 {
		count, _ := g.Int("split.count")
		g.Close()
		return nil, &SplitError{Path: path, Reason: fmt.Sprintf("it is shard %d of %d; open the first, …-00001-of-%05d.gguf", no+1, count, count)}
	}
	cfg, err := ConfigFromGGUF(g)
	if err != nil {
		g.Close()
		return nil, err
	}
	f := &Files{Path: path, Format: FormatGGUF, Arch: archs[cfg.Arch], Config: cfg, Weights: g,
		WeightPaths: []string{path}, Size: size, GGUF: g}
	if n, ok := g.Int("split.count"); ok && n > 1 { // a split GGUF: path is its first shard
		s, err := openSplit(path, g, n, size)
		if err != nil {
			g.Close()
			return nil, err
		}
		f.Weights, f.WeightPaths, f.Size = s, s.paths, s.size
	}
	return f, nil
}

func readLimited(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	if st.Size() > limit {
		return nil, &ConfigError{Path: path, Reason: fmt.Sprintf("%d bytes, over the %d limit", st.Size(), limit)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	return data, nil
}

func base(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}
