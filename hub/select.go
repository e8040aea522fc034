package hub

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Kind is what a pull fetched.
type Kind int

const (
	GGUF        Kind = iota + 1 // one GGUF model (one file, or the shards of a split one)
	Safetensors                 // a transformers folder: config, tokenizer, weights
	PEFT                        // a PEFT LoRA adapter folder: adapter_config.json, adapter_model.safetensors
)

// choice is the files a name picks out of a repository.
type choice struct {
	kind  Kind
	files []string // GGUF: the shards in order; safetensors: config and tokenizer files, the index (shards come from it)
	index string   // safetensors: the *.safetensors.index.json, if any
}

// DefaultQuants are the quantisations a GGUF repository's model is picked
// by when the name gives none, in order; failing all, the smallest Q4 of
// any kind, else the repository's only GGUF model, else ErrAmbiguous with
// the list to choose from.
var DefaultQuants = []string{"Q4_K_M", "Q4_0"}

// splitRe is a split GGUF's shard suffix, as llama.cpp's gguf-split
// writes it: NAME-00001-of-00003.gguf.
var splitRe = regexp.MustCompile(`(?i)-(\d{5})-of-(\d{5})\.gguf$`)

// ggufModel is a GGUF model of a repository: its shards, in order.
type ggufModel struct {
	name   string // the path without .gguf or the shard suffix
	shards []string
	size   int64
}

// ggufModels groups a repository's .gguf files into models (a split
// model's shards are one), leaving out vision projectors (mmproj) and a
// split model with shards missing.
func ggufModels(files []File) []ggufModel {
	byName := map[string]*ggufModel{}
	want := map[string]int{}
	for _, f := range files {
		lower := strings.ToLower(f.Name)
		if !strings.HasSuffix(lower, ".gguf") || strings.Contains(strings.ToLower(path.Base(f.Name)), "mmproj") {
			continue
		}
		name := f.Name[:len(f.Name)-len(".gguf")]
		if m := splitRe.FindStringSubmatch(f.Name); m != nil {
			name = f.Name[:len(f.Name)-len(m[0])]
			var n int
			fmt.Sscan(strings.TrimLeft(m[2], "0"), &n)
			want[name] = n
		}
		g := byName[name]
		if g == nil {
			g = &ggufModel{name: name}
			byName[name] = g
		}
		g.shards = append(g.shards, f.Name)
		g.size += f.Size
	}
	var out []ggufModel
	for name, g := range byName {
		sort.Strings(g.shards)
		if n, split := want[name]; split && len(g.shards) != n {
			continue
		}
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// hasQuant reports whether name carries the quantisation q as a word of
// its own, case-insensitively: "qwen2.5-0.5b-instruct-q4_k_m" carries
// Q4_K_M but not Q4_K.
func hasQuant(name, q string) bool {
	name, q = strings.ToLower(name), strings.ToLower(q)
	for i := 0; ; {
		j := strings.Index(name[i:], q)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(q)
		before := j == 0 || strings.IndexByte("-._/", name[j-1]) >= 0
		after := end == len(name) || strings.IndexByte("-./", name[end]) >= 0
		if before && after {
			return true
		}
		i = j + 1
	}
}

// quantOf is a GGUF model's quantisation as its name spells it (the last
// word that looks like one), for listing choices.
var quantRe = regexp.MustCompile(`(?i)(?:^|[-._/])((?:UD-)?(?:I?Q\d[A-Z0-9_]*|F16|BF16|F32))(?:$|[-./])`)

func quantOf(name string) string {
	m := quantRe.FindAllStringSubmatch(name, -1)
	if m == nil {
		return path.Base(name)
	}
	return m[len(m)-1][1]
}

// choose picks the files of r among the repository's files.
func choose(r Ref, files []File) (choice, error) {
	byName := map[string]File{}
	for _, f := range files {
		byName[f.Name] = f
	}
	models := ggufModels(files)
	if r.File != "" {
		if _, ok := byName[r.File]; !ok {
			return choice{}, fmt.Errorf("%w: %s has no file %s", ErrNoMatch, r.RepoID(), r.File)
		}
		if strings.HasSuffix(strings.ToLower(r.File), ".gguf") {
			for _, m := range models {
				for _, s := range m.shards {
					if s == r.File {
						return choice{kind: GGUF, files: m.shards}, nil
					}
				}
			}
			return choice{kind: GGUF, files: []string{r.File}}, nil
		}
		return choice{}, fmt.Errorf("%w: %s is not a .gguf file; name a safetensors repository without a file", ErrNoMatch, r.File)
	}
	if r.Quant != "" {
		var hit []ggufModel
		for _, m := range models {
			if hasQuant(m.name, r.Quant) {
				hit = append(hit, m)
			}
		}
		switch len(hit) {
		case 1:
			return choice{kind: GGUF, files: hit[0].shards}, nil
		case 0:
			if len(models) == 0 {
				return choice{}, fmt.Errorf("%w: %s has no GGUF files", ErrNoMatch, r.RepoID())
			}
			return choice{}, fmt.Errorf("%w: %s has no %s GGUF; it has %s", ErrNoMatch, r.RepoID(), r.Quant, listQuants(models))
		}
		return choice{}, fmt.Errorf("%w: %s has several %s GGUFs (%s); name one as hf://%s/FILE", ErrAmbiguous, r.RepoID(), r.Quant, listNames(hit), r.RepoID())
	}
	if c, ok := chooseSafetensors(files, byName); ok {
		return c, nil
	}
	if _, ok := byName["adapter_config.json"]; ok && len(models) == 0 {
		if _, ok := byName["adapter_model.safetensors"]; ok {
			return choice{kind: PEFT, files: []string{"adapter_config.json", "adapter_model.safetensors"}}, nil
		}
	}
	if len(models) == 0 {
		return choice{}, fmt.Errorf("%w: %s has neither GGUF files, nor config.json with safetensors weights, nor a PEFT adapter (adapter_config.json, adapter_model.safetensors)", ErrNoMatch, r.RepoID())
	}
	if len(models) == 1 {
		return choice{kind: GGUF, files: models[0].shards}, nil
	}
	for _, q := range DefaultQuants {
		var hit []ggufModel
		for _, m := range models {
			if hasQuant(m.name, q) {
				hit = append(hit, m)
			}
		}
		if len(hit) == 1 {
			return choice{kind: GGUF, files: hit[0].shards}, nil
		}
	}
	var best *ggufModel
	for i, m := range models {
		if q := strings.TrimPrefix(strings.ToUpper(quantOf(m.name)), "UD-"); strings.HasPrefix(q, "Q4") || strings.HasPrefix(q, "IQ4") {
			if best == nil || m.size < best.size {
				best = &models[i]
			}
		}
	}
	if best != nil {
		return choice{kind: GGUF, files: best.shards}, nil
	}
	return choice{}, fmt.Errorf("%w: %s has %d GGUF models and no Q4 one; pick one as hf://%s:QUANT, QUANT one of %s", ErrAmbiguous, r.RepoID(), len(models), r.RepoID(), listQuants(models))
}

// metaFiles are the files of a transformers folder fetched besides the
// weights, when the repository has them.
var metaFiles = []string{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
	"special_tokens_map.json", "tokenizer.model", "vocab.json", "merges.txt", "added_tokens.json",
	"chat_template.json", "chat_template.jinja"}

// chooseSafetensors picks a transformers folder at the repository's root:
// config.json, the tokenizer files, and the weights' index (its shards
// are read from it after it is fetched) or the one .safetensors file.
func chooseSafetensors(files []File, byName map[string]File) (choice, bool) {
	if _, ok := byName["config.json"]; !ok {
		return choice{}, false
	}
	c := choice{kind: Safetensors}
	for _, m := range metaFiles {
		if _, ok := byName[m]; ok {
			c.files = append(c.files, m)
		}
	}
	var single []string
	for _, f := range files {
		switch {
		case strings.Contains(f.Name, "/"):
		case strings.HasSuffix(f.Name, ".safetensors.index.json") && (c.index == "" || f.Name == "model.safetensors.index.json"):
			c.index = f.Name
		case strings.HasSuffix(f.Name, ".safetensors"):
			single = append(single, f.Name)
		}
	}
	switch {
	case c.index != "":
		c.files = append(c.files, c.index)
	case len(single) == 1:
		c.files = append(c.files, single[0])
	case len(single) > 1 && contains(single, "model.safetensors"):
		c.files = append(c.files, "model.safetensors")
	default:
		return choice{}, false
	}
	return c, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func listQuants(models []ggufModel) string {
	var q []string
	for _, m := range models {
		if s := strings.ToUpper(quantOf(m.name)); !contains(q, s) {
			q = append(q, s)
		}
	}
	return strings.Join(q, ", ")
}

func listNames(models []ggufModel) string {
	q := make([]string, len(models))
	for i, m := range models {
		q[i] = m.shards[0]
	}
	return strings.Join(q, ", ")
}
