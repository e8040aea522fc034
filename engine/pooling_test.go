package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/kernels"
)

// writeFiles writes name → content under a new temporary folder.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	stModules = `[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
	{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
	{"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]`
	stLast = `{"word_embedding_dimension":64,"pooling_mode_cls_token":false,"pooling_mode_mean_tokens":false,
	"pooling_mode_max_tokens":false,"pooling_mode_mean_sqrt_len_tokens":false,"pooling_mode_weightedmean_tokens":false,
	"pooling_mode_lasttoken":true,"include_prompt":true}`
	stMean = `{"word_embedding_dimension":64,"pooling_mode_mean_tokens":true,"pooling_mode_lasttoken":false}`
)

func TestReadSTPooling(t *testing.T) {
	for _, c := range []struct {
		name     string
		files    map[string]string
		want     Pooling
		from     string // the file read, relative
		wantErr  error  // errors.Is
		otherErr bool   // an error that is not ErrPooling
	}{
		{name: "no files", files: map[string]string{}},
		{name: "last token", files: map[string]string{"modules.json": stModules, "1_Pooling/config.json": stLast}, want: PoolLast, from: "1_Pooling/config.json"},
		{name: "mean", files: map[string]string{"modules.json": stModules, "1_Pooling/config.json": stMean}, want: PoolMean, from: "1_Pooling/config.json"},
		{name: "pooling folder without modules.json", files: map[string]string{"1_Pooling/config.json": stMean}, want: PoolMean, from: "1_Pooling/config.json"},
		{name: "modules elsewhere", files: map[string]string{
			"modules.json":          `[{"path":"","type":"sentence_transformers.models.Transformer"},{"path":"pool","type":"sentence_transformers.models.Pooling"}]`,
			"pool/config.json":      stMean,
			"1_Pooling/config.json": stLast}, want: PoolMean, from: "pool/config.json"},
		{name: "no pooling module", files: map[string]string{"modules.json": `[{"path":"","type":"sentence_transformers.models.Transformer"}]`, "1_Pooling/config.json": stMean}},
		{name: "cls", files: map[string]string{"1_Pooling/config.json": `{"pooling_mode_cls_token":true}`}, wantErr: ErrPooling, from: "1_Pooling/config.json"},
		{name: "two modes", files: map[string]string{"1_Pooling/config.json": `{"pooling_mode_mean_tokens":true,"pooling_mode_lasttoken":true}`}, wantErr: ErrPooling, from: "1_Pooling/config.json"},
		{name: "no mode", files: map[string]string{"1_Pooling/config.json": `{}`}, wantErr: ErrPooling, from: "1_Pooling/config.json"},
		{name: "dense module", files: map[string]string{"modules.json": `[{"path":"","type":"sentence_transformers.models.Transformer"},{"path":"2_Dense","type":"sentence_transformers.models.Dense"}]`},
			wantErr: ErrPooling, from: "modules.json"},
		{name: "bad modules.json", files: map[string]string{"modules.json": `{`}, otherErr: true},
		{name: "bad pooling config", files: map[string]string{"1_Pooling/config.json": `[1,`}, otherErr: true},
		{name: "path outside the folder", files: map[string]string{
			"modules.json":    `[{"path":"../../../etc","type":"sentence_transformers.models.Pooling"}]`,
			"etc/config.json": stMean}, want: PoolMean, from: "etc/config.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := writeFiles(t, c.files)
			got, from, err := readSTPooling(dir)
			switch {
			case c.otherErr:
				if err == nil || errors.Is(err, ErrPooling) {
					t.Fatalf("err %v, want a read error that is not ErrPooling", err)
				}
				return
			case c.wantErr != nil:
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case got != c.want:
				t.Fatalf("pooling %v, want %v", got, c.want)
			}
			if want := filepath.Join(dir, c.from); c.from == "" && from != "" || c.from != "" && from != want {
				t.Fatalf("from %q, want %q", from, c.from)
			}
		})
	}
}

// TestEmbedFolderPooling: a model folder whose sentence-transformers
// files say mean pooling embeds as PoolMean by default (and a Dense
// module is refused unless a pooling is given).
func TestEmbedFolderPooling(t *testing.T) {
	src, err := filepath.Abs(tinyModel)
	if err != nil {
		t.Fatal(err)
	}
	dir := writeFiles(t, map[string]string{"modules.json": stModules, "1_Pooling/config.json": stMean})
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := Open(context.Background(), dir, Options{Backend: kernels.CPURef, MaxSeqs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := l.EmbedConfig()
	if err != nil || c.Pooling != PoolMean || c.Size != 64 || c.Err != nil {
		t.Fatalf("EmbedConfig %+v, %v; want mean pooling of 64 values", c, err)
	}
	in := [][]int32{{17, 200, 33, 41, 5, 99, 250}}
	def, err := l.EmbedTokens(context.Background(), in, EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Pooling{PoolMean, PoolLast} {
		got, err := l.EmbedTokens(context.Background(), in, EmbedOptions{Pooling: p})
		if err != nil {
			t.Fatal(err)
		}
		if same := farVecIs(got[0].Vector, def[0].Vector); same != (p == PoolMean) {
			t.Fatalf("default equal to %v: %v, want %v", p, same, p == PoolMean)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "modules.json"), []byte(`[{"path":"2_Dense","type":"sentence_transformers.models.Dense"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	l2, err := Open(context.Background(), dir, Options{Backend: kernels.CPURef, MaxSeqs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if _, err := l2.EmbedTokens(context.Background(), in, EmbedOptions{}); !errors.Is(err, ErrPooling) {
		t.Fatalf("a Dense module, default pooling: %v, want ErrPooling", err)
	}
	if _, err := l2.EmbedTokens(context.Background(), in, EmbedOptions{Pooling: PoolLast}); err != nil {
		t.Fatalf("a Dense module, pooling given: %v", err)
	}
}

func farVecIs(a, b []float32) bool {
	j, _ := farVec(a, b, 0)
	return j < 0 && len(a) == len(b)
}

// TestEmbedConfigGGUF: a GGUF without <arch>.pooling_type (a generative
// model's) pools the last token by default.
func TestEmbedConfigGGUF(t *testing.T) {
	l, err := Open(context.Background(), filepath.Join(filepath.Dir(tinyModel), "qwen2-tiny-F32.gguf"), Options{Backend: kernels.CPURef, MaxSeqs: 1, ContextLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := l.EmbedConfig()
	if err != nil || c.Pooling != PoolLast || c.From != "" || c.Err != nil || c.Size != 64 || c.MaxTokens != 64 {
		t.Fatalf("EmbedConfig %+v, %v; want the default last-token pooling, 64 values, 64 tokens", c, err)
	}
}
