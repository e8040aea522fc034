package tokenizer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/tensor/gguf"
)

// ggufBytes writes v's metadata as a GGUF file (no tensors), plus extra keys.
func ggufBytes(t *testing.T, v *ggufVocab, extra ...gguf.KV) []byte {
	kv := []gguf.KV{
		{Key: "general.architecture", Value: gguf.Value{Type: gguf.String, V: "llama"}},
		{Key: "tokenizer.ggml.model", Value: gguf.Value{Type: gguf.String, V: v.Model}},
		{Key: "tokenizer.ggml.pre", Value: gguf.Value{Type: gguf.String, V: v.Pre}},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Value{Type: gguf.ArrayType, V: gguf.Array{Elem: gguf.String, V: v.Tokens}}},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Value{Type: gguf.ArrayType, V: gguf.Array{Elem: gguf.Int32, V: v.Types}}},
		{Key: "tokenizer.ggml.merges", Value: gguf.Value{Type: gguf.ArrayType, V: gguf.Array{Elem: gguf.String, V: v.Merges}}},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Value{Type: gguf.Uint32, V: uint32(v.BOS)}},
		{Key: "tokenizer.ggml.eos_token_id", Value: gguf.Value{Type: gguf.Uint32, V: uint32(v.EOS)}},
		{Key: "tokenizer.ggml.add_bos_token", Value: gguf.Value{Type: gguf.Bool, V: false}},
		{Key: "tokenizer.chat_template", Value: gguf.Value{Type: gguf.String, V: "{{ messages }}"}},
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, append(kv, extra...), nil, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFromGGUF: SmolLM2's vocab written to a GGUF file and read back gives
// the HF goldens.
func TestFromGGUF(t *testing.T) {
	f, err := gguf.Parse(ggufBytes(t, smollm2Vocab(t)))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	checkGGUFGoldens(t, tk, "smollm2")
	if tk.ChatTemplate != "{{ messages }}" || tk.AddBOS {
		t.Errorf("template %q, AddBOS %v", tk.ChatTemplate, tk.AddBOS)
	}
}

// TestFromGGUFRealFile runs the goldens on the real SmolLM2 GGUF when it is
// on this machine (make real-model fetches it).
func TestFromGGUFRealFile(t *testing.T) {
	home, _ := os.UserHomeDir()
	path := filepath.Join(home, ".cache", "vkllm", "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("real model not found at %s: run `make real-model`", path)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	checkGGUFGoldens(t, tk, "smollm2")
	if bos, ok := tk.BOS(); !ok || bos != 1 || tk.AddBOS {
		t.Errorf("BOS %d %v, AddBOS %v", bos, ok, tk.AddBOS)
	}
	if !bytes.Contains([]byte(tk.ChatTemplate), []byte("<|im_start|>")) {
		t.Errorf("chat template %.60q", tk.ChatTemplate)
	}
}

func TestFromGGUFErrors(t *testing.T) {
	v := smollm2Vocab(t)
	v.Pre = "mystery-pre"
	f, err := gguf.Parse(ggufBytes(t, v))
	if err != nil {
		t.Fatal(err)
	}
	_, err = FromGGUF(f)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Type != "mystery-pre" {
		t.Errorf("unknown pre: %v", err)
	}
	f, err = gguf.Parse(ggufBytes(t, smollm2Vocab(t),
		gguf.KV{Key: "tokenizer.ggml.unknown_token_id", Value: gguf.Value{Type: gguf.Uint32, V: uint32(1 << 30)}}))
	if err != nil {
		t.Fatal(err)
	}
	var fe *FormatError
	if _, err = FromGGUF(f); !errors.As(err, &fe) || fe.Where != "tokenizer.ggml.unknown_token_id" {
		t.Errorf("bad unk id: %v", err)
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, []gguf.KV{{Key: "general.architecture", Value: gguf.Value{Type: gguf.String, V: "llama"}}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	f, err = gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, err = FromGGUF(f); !errors.As(err, &fe) || fe.Where != "tokenizer.ggml.model" {
		t.Errorf("no tokenizer: %v", err)
	}
	buf.Reset()
	if err := gguf.Write(&buf, []gguf.KV{{Key: "tokenizer.ggml.model", Value: gguf.Value{Type: gguf.String, V: "no_vocab"}}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if f, err = gguf.Parse(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	if _, err = FromGGUF(f); !errors.Is(err, ErrNoVocabulary) {
		t.Errorf("no_vocab: %v, want ErrNoVocabulary", err)
	}
}

// FuzzFromGGUF: whatever GGUF metadata holds, FromGGUF returns a tokenizer
// or an error, never panics; what loads can encode and decode.
func FuzzFromGGUF(f *testing.F) {
	f.Add(ggufBytesF(f, "gpt2", "smollm"))
	f.Add(ggufBytesF(f, "gpt2", "llama-bpe"))
	f.Add(ggufBytesF(f, "gpt2", "default"))
	f.Add(ggufBytesF(f, "llama", "default"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gf, err := gguf.Parse(data)
		if err != nil {
			return
		}
		tk, err := FromGGUF(gf)
		if err != nil {
			return
		}
		for _, s := range []string{"", "ab ba <s> A 12", "é😀"} {
			if ids, err := tk.Encode(s, true); err == nil {
				tk.Decode(ids, false)
				tk.Decode(ids, true)
			}
		}
	})
}

// ggufBytesF is a tiny GGUF vocab for fuzz seeds.
func ggufBytesF(f *testing.F, model, pre string) []byte {
	kv := []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: gguf.Value{Type: gguf.String, V: model}},
		{Key: "tokenizer.ggml.pre", Value: gguf.Value{Type: gguf.String, V: pre}},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Value{Type: gguf.ArrayType, V: gguf.Array{Elem: gguf.String,
			V: []string{"<s>", "a", "b", "ab", "Ġ", "▁", "<0x41>", "▁a"}}}},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Value{Type: gguf.ArrayType, V: gguf.Array{Elem: gguf.Int32,
			V: []int32{3, 1, 1, 1, 1, 1, 6, 1}}}},
		{Key: "tokenizer.ggml.scores", Value: gguf.Value{Type: gguf.ArrayType, V: gguf.Array{Elem: gguf.Float32,
			V: []float32{0, -1, -2, -3, -4, -5, -6, -7}}}},
		{Key: "tokenizer.ggml.bos_token_id", Value: gguf.Value{Type: gguf.Uint32, V: uint32(0)}},
	}
	if model == "gpt2" {
		kv = append(kv, gguf.KV{Key: "tokenizer.ggml.merges", Value: gguf.Value{Type: gguf.ArrayType, V: gguf.Array{Elem: gguf.String, V: []string{"a b"}}}})
	}
	var buf bytes.Buffer
	if err := gguf.Write(&buf, kv, nil, nil); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}
