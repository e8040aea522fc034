package tokenizer

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// ggufVocab is the tokenizer metadata of a GGUF file (tokenizer.ggml.*);
// FromGGUF fills it from the file, fromGGUFVocab builds the tokenizer.
type ggufVocab struct {
	Model  string    // tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama" (SentencePiece)
	Pre    string    // tokenizer.ggml.pre: pre-tokenizer name (see ggufPre)
	Tokens []string  // tokenizer.ggml.tokens, by id
	Merges []string  // tokenizer.ggml.merges: "a b"; for "llama" usually absent
	Scores []float32 // tokenizer.ggml.scores: "llama" merges are derived from them
	Types  []int32   // tokenizer.ggml.token_type (see tokType*)

	BOS, EOS, UNK, PAD int64   // token ids, -1 when absent
	EOT, EOM           []int64 // end-of-turn ids (eot_token_id, eom_token_id), if any
	AddBOS, AddEOS     *bool   // tokenizer.ggml.add_bos_token / add_eos_token
	AddSpacePrefix     *bool   // tokenizer.ggml.add_space_prefix ("llama")
	ChatTemplate       string  // tokenizer.chat_template
}

// llama.cpp's token types.
const (
	tokTypeNormal      = 1
	tokTypeUnknown     = 2
	tokTypeControl     = 3
	tokTypeUserDefined = 4
	tokTypeUnused      = 5
	tokTypeByte        = 6
)

// ggufPre is how a "gpt2" vocab's tokenizer.ggml.pre maps to a
// pre-tokenizer: the regexes llama.cpp (src/llama-vocab.cpp) uses for it,
// written as the tokenizer.json steps of the HF tokenizer it came from.
type ggufPre struct {
	split        string // one Split regex before ByteLevel(use_regex=false)…
	digits       bool   // …or Digits(individual) then ByteLevel(use_regex=true)…
	gpt2         bool   // …or ByteLevel(use_regex=true) alone…
	splits       []string
	ignoreMerges bool // llama.cpp's ignore_merges (the Llama 3 family)
	addBOS       bool // llama.cpp's default when add_bos_token is absent
}

// llama.cpp's "default" pre-tokenizer for BPE: four regexes in turn.
var ggufDefaultSplits = []string{
	`[\p{P}\$\+<=>\^~\|]+`,
	`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
	`\p{N}+`,
	`[0-9][0-9][0-9]`,
}

// Mistral's Tekken regex, as in its tokenizer.json.
const patTekken = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

var ggufPres = func() map[string]ggufPre {
	m := map[string]ggufPre{}
	for _, n := range []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"} {
		m[n] = ggufPre{split: patLlama3, ignoreMerges: true, addBOS: true}
	}
	for _, n := range []string{"dbrx", "smaug-bpe", "chatglm-bpe"} {
		m[n] = ggufPre{split: patLlama3}
	}
	for _, n := range []string{"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez"} {
		m[n] = ggufPre{split: patQwen2}
	}
	for _, n := range []string{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"} {
		m[n] = ggufPre{digits: true}
	}
	for _, n := range []string{"gpt-2", "phi-2", "mpt", "olmo", "jais"} {
		m[n] = ggufPre{gpt2: true}
	}
	m["tekken"] = ggufPre{split: patTekken}
	m["default"] = ggufPre{splits: ggufDefaultSplits}
	return m
}()

// fromGGUFVocab builds the tokenizer a GGUF vocab describes, the way
// llama.cpp reads it, as the HF pipeline that tokenizer.json would hold.
func fromGGUFVocab(v *ggufVocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, formatErr("tokenizer.ggml.tokens", "missing or empty")
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, formatErr("tokenizer.ggml.token_type", "%d entries for %d tokens", len(v.Types), n)
	}
	for _, id := range []int64{v.BOS, v.EOS, v.UNK, v.PAD} {
		if id >= int64(n) || id < -1 {
			return nil, formatErr("tokenizer.ggml", "special token id %d out of range [0, %d)", id, n)
		}
	}
	for i, s := range v.Tokens {
		if !utf8.ValidString(s) {
			return nil, formatErr(fmt.Sprintf("tokenizer.ggml.tokens[%d]", i), "not valid UTF-8")
		}
	}
	vocab := make(map[string]int32, n)
	for i, s := range v.Tokens {
		vocab[s] = int32(i)
	}
	t := &Tokenizer{bosID: -1, ChatTemplate: v.ChatTemplate}
	var merges [][2]string
	addBOS := false
	switch v.Model {
	case "gpt2":
		pre, ok := ggufPres[v.Pre]
		if !ok {
			return nil, &UnsupportedError{Component: "gguf tokenizer.ggml.pre", Type: v.Pre}
		}
		for i, l := range v.Merges {
			a, b, ok := cutSpace(l)
			if !ok {
				return nil, formatErr(fmt.Sprintf("tokenizer.ggml.merges[%d]", i), "%q is not two tokens separated by one space", l)
			}
			merges = append(merges, [2]string{a, b})
		}
		m, err := newBPE(vocab, merges, "", "", "")
		if err != nil {
			return nil, err
		}
		m.ignoreMerges = pre.ignoreMerges
		t.model = m
		switch {
		case pre.split != "":
			mt, err := compileRegex(pre.split)
			if err != nil {
				return nil, err
			}
			t.preTok = []preTokenizer{&splitPre{m: mt, beh: behIsolated}, &byteLevelPre{}}
		case pre.digits:
			t.preTok = []preTokenizer{&digitsPre{individual: true}, &byteLevelPre{useRegex: true}}
		case pre.gpt2:
			t.preTok = []preTokenizer{&byteLevelPre{useRegex: true}}
		default:
			for _, re := range pre.splits {
				mt, err := compileRegex(re)
				if err != nil {
					return nil, err
				}
				t.preTok = append(t.preTok, &splitPre{m: mt, beh: behIsolated})
			}
			t.preTok = append(t.preTok, &byteLevelPre{})
		}
		t.decoder = byteLevelDec{}
		addBOS = pre.addBOS
	case "llama":
		if v.Scores == nil && v.Merges == nil {
			return nil, formatErr("tokenizer.ggml.scores", "a llama vocab needs scores or merges")
		}
		if v.Merges != nil {
			for i, l := range v.Merges {
				a, b, ok := cutSpace(l)
				if !ok {
					return nil, formatErr(fmt.Sprintf("tokenizer.ggml.merges[%d]", i), "%q is not two tokens separated by one space", l)
				}
				merges = append(merges, [2]string{a, b})
			}
		} else {
			if len(v.Scores) != n {
				return nil, formatErr("tokenizer.ggml.scores", "%d scores for %d tokens", len(v.Scores), n)
			}
			merges = mergesFromScores(v.Tokens, v.Scores, vocab)
		}
		// As transformers builds it: byte fallback, no unk token in the model.
		m, err := newBPE(vocab, merges, "", "", "")
		if err != nil {
			return nil, err
		}
		m.fuseUnk, m.byteFallback = true, true
		t.model = m
		prefix := v.AddSpacePrefix == nil || *v.AddSpacePrefix
		ms := &metaspacePre{replacement: '▁', repl: "▁", scheme: prependNever}
		dec := decoderSeq{replaceDec{m: literalMatcher("▁"), content: " "}, byteFallbackDec{}, fuseDec{}}
		if prefix {
			ms.scheme = prependFirst
			dec = append(dec, stripDec{content: ' ', start: 1})
		}
		t.preTok = []preTokenizer{ms}
		t.decoder = dec
		addBOS = true
	default:
		return nil, &UnsupportedError{Component: "gguf tokenizer.ggml.model", Type: v.Model}
	}
	// Control tokens are special added tokens, user-defined ones plain added
	// tokens (both always matched whole, as llama.cpp does).
	// The bos/eos/unk/pad tokens are special too, as transformers makes them.
	var added []rawAddedToken
	for i := range v.Tokens {
		typ := int32(tokTypeNormal)
		if v.Types != nil {
			typ = v.Types[i]
		}
		id := int64(i)
		named := id == v.BOS || id == v.EOS || id == v.UNK || id == v.PAD
		if typ != tokTypeControl && typ != tokTypeUserDefined && !named {
			continue
		}
		added = append(added, rawAddedToken{ID: &id, Content: v.Tokens[i], Special: typ != tokTypeUserDefined, Normalized: new(bool)})
	}
	if err := t.setAddedTokens(added); err != nil {
		return nil, err
	}
	if v.AddBOS != nil {
		addBOS = *v.AddBOS
	}
	addEOS := v.AddEOS != nil && *v.AddEOS
	t.AddBOS, t.AddEOS = addBOS, addEOS
	var items []templateItem
	if addBOS && v.BOS >= 0 {
		items = append(items, templateItem{ids: []int32{int32(v.BOS)}})
	}
	items = append(items, templateItem{seq: true})
	if addEOS && v.EOS >= 0 {
		items = append(items, templateItem{ids: []int32{int32(v.EOS)}})
	}
	if len(items) > 1 {
		t.post = &templatePost{items: items}
	}
	name := func(id int64) string {
		if id < 0 {
			return ""
		}
		return v.Tokens[id]
	}
	t.BOSToken, t.EOSToken, t.UnkToken, t.PadToken = name(v.BOS), name(v.EOS), name(v.UNK), name(v.PAD)
	if v.BOS >= 0 {
		t.bosID = int32(v.BOS)
	}
	for _, id := range append(append([]int64{v.EOS}, v.EOT...), v.EOM...) {
		if id >= 0 && id < int64(n) && !containsID(t.eos, int32(id)) {
			t.eos = append(t.eos, int32(id))
		}
	}
	t.finish()
	return t, nil
}

// mergesFromScores recovers BPE merges from a SentencePiece vocab and its
// scores, as transformers' generate_merges does: every split of a token into
// two tokens is a merge, ranked by the token's score (best first), then by
// the lengths of the two parts (longer first), ties kept in vocab order.
func mergesFromScores(tokens []string, scores []float32, vocab map[string]int32) [][2]string {
	type cand struct {
		a, b           string
		score          float32
		la, lb, ia, ib int
		order          int
	}
	// dict(zip(tokens, scores)): the first position of a token, its last score.
	first := map[string]int{}
	score := map[string]float32{}
	var order []string
	for i, s := range tokens {
		if _, ok := first[s]; !ok {
			first[s] = i
			order = append(order, s)
		}
		score[s] = scores[i]
	}
	var all []cand
	for _, tok := range order {
		var local []cand
		// Split points at character boundaries.
		for i := range tok {
			if i == 0 {
				continue
			}
			l, r := tok[:i], tok[i:]
			ia, okA := vocab[l]
			ib, okB := vocab[r]
			if okA && okB {
				local = append(local, cand{a: l, b: r, score: score[tok], la: utf8.RuneCountInString(l),
					lb: utf8.RuneCountInString(r), ia: int(ia), ib: int(ib)})
			}
		}
		sort.SliceStable(local, func(x, y int) bool {
			if local[x].ia != local[y].ia {
				return local[x].ia < local[y].ia
			}
			return local[x].ib < local[y].ib
		})
		all = append(all, local...)
	}
	// sorted(..., key=(score, len(a), len(b)), reverse=True) is stable.
	sort.SliceStable(all, func(x, y int) bool {
		p, q := all[x], all[y]
		if p.score != q.score {
			return p.score > q.score
		}
		if p.la != q.la {
			return p.la > q.la
		}
		return p.lb > q.lb
	})
	out := make([][2]string, len(all))
	for i, c := range all {
		out[i] = [2]string{c.a, c.b}
	}
	return out
}
