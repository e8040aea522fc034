package hub

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func gguf(names ...string) []File {
	var fs []File
	for i, n := range names {
		fs = append(fs, File{Name: n, Size: int64(1000 - i)})
	}
	return fs
}

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		name  string
		ref   Ref
		files []File
		want  []string
		err   error
	}{
		{"default Q4_K_M", Ref{}, gguf("m-Q8_0.gguf", "m-Q4_K_M.gguf", "m-Q4_0.gguf", "README.md"), []string{"m-Q4_K_M.gguf"}, nil},
		{"then Q4_0", Ref{}, gguf("m-Q8_0.gguf", "m-q4_0.gguf", "m-Q4_K_S.gguf"), []string{"m-q4_0.gguf"}, nil},
		{"then the smallest Q4", Ref{}, gguf("m-Q8_0.gguf", "m-Q4_K_S.gguf", "m-IQ4_XS.gguf"), []string{"m-IQ4_XS.gguf"}, nil},
		{"the only model", Ref{}, gguf("m-F16.gguf", "mmproj-m-f16.gguf"), []string{"m-F16.gguf"}, nil},
		{"else ask", Ref{}, gguf("m-F16.gguf", "m-Q8_0.gguf"), nil, ErrAmbiguous},
		{"quant, any case", Ref{Quant: "q4_k_m"}, gguf("m-Q4_K_M.gguf", "m-Q4_K_S.gguf"), []string{"m-Q4_K_M.gguf"}, nil},
		{"Q4_K is not Q4_K_M", Ref{Quant: "Q4_K"}, gguf("m-Q4_K_M.gguf", "m-Q4_K_S.gguf"), nil, ErrNoMatch},
		{"shards are one model", Ref{Quant: "Q8_0"},
			gguf("Q8_0/m-Q8_0-00002-of-00003.gguf", "Q8_0/m-Q8_0-00001-of-00003.gguf", "Q8_0/m-Q8_0-00003-of-00003.gguf", "m-Q4_K_M.gguf"),
			[]string{"Q8_0/m-Q8_0-00001-of-00003.gguf", "Q8_0/m-Q8_0-00002-of-00003.gguf", "Q8_0/m-Q8_0-00003-of-00003.gguf"}, nil},
		{"a split model missing a shard is no model", Ref{Quant: "Q8_0"}, gguf("m-Q8_0-00001-of-00002.gguf"), nil, ErrNoMatch},
		{"no GGUF", Ref{Quant: "Q4_0"}, gguf("README.md"), nil, ErrNoMatch},
		{"a file", Ref{File: "m-Q8_0.gguf"}, gguf("m-Q8_0.gguf", "m-Q4_K_M.gguf"), []string{"m-Q8_0.gguf"}, nil},
		{"safetensors single", Ref{}, gguf("config.json", "tokenizer.json", "model.safetensors", "sub/model.safetensors"), []string{"config.json", "tokenizer.json", "model.safetensors"}, nil},
		{"safetensors with an index", Ref{}, gguf("config.json", "tokenizer.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors"), []string{"config.json", "tokenizer.json", "model.safetensors.index.json"}, nil},
		{"several safetensors, no index", Ref{}, gguf("config.json", "a.safetensors", "b.safetensors"), nil, ErrNoMatch},
		{"a quant in a repo with both picks the GGUF", Ref{Quant: "Q4_K_M"}, gguf("config.json", "model.safetensors", "m-Q4_K_M.gguf"), []string{"m-Q4_K_M.gguf"}, nil},
		{"a PEFT adapter", Ref{}, gguf("README.md", "adapter_config.json", "adapter_model.safetensors", "tokenizer.json"), []string{"adapter_config.json", "adapter_model.safetensors"}, nil},
		{"a PEFT config without safetensors weights", Ref{}, gguf("adapter_config.json", "adapter_model.bin"), nil, ErrNoMatch},
		{"a GGUF adapter is the only model", Ref{}, gguf("adapter_config.json", "adapter_model.safetensors", "lora-F16.gguf"), []string{"lora-F16.gguf"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.ref.Owner, c.ref.Repo = "o", "r"
			got, err := choose(c.ref, c.files)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("got %v, %v; want %v", got.files, err, c.err)
				}
				return
			}
			if err != nil || !slices.Equal(got.files, c.want) {
				t.Fatalf("got %v, %v; want %v", got.files, err, c.want)
			}
		})
	}
}

// FuzzChoose: any file list and name pick files of the list, or fail with
// ErrNoMatch or ErrAmbiguous; never a panic.
func FuzzChoose(f *testing.F) {
	f.Add("m-Q4_K_M.gguf\nm-Q8_0-00001-of-00002.gguf\nm-Q8_0-00002-of-00002.gguf\nconfig.json", "Q8_0", "")
	f.Add("config.json\nmodel.safetensors\ntokenizer.json", "", "")
	f.Add("a/b-IQ4_XS.gguf\nmmproj.gguf", "", "a/b-IQ4_XS.gguf")
	f.Fuzz(func(t *testing.T, list, quant, file string) {
		var files []File
		in := map[string]bool{}
		for i, n := range strings.Split(list, "\n") {
			files = append(files, File{Name: n, Size: int64(i)})
			in[n] = true
		}
		c, err := choose(Ref{Owner: "o", Repo: "r", Quant: quant, File: file}, files)
		if err != nil {
			if !errors.Is(err, ErrNoMatch) && !errors.Is(err, ErrAmbiguous) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if len(c.files) == 0 {
			t.Fatal("no files chosen")
		}
		for _, n := range c.files {
			if !in[n] {
				t.Fatalf("chose %q, not in the list", n)
			}
		}
	})
}
