package tokenizer

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// Tokenizer encodes text to token ids and back, equal to HF tokenizers for
// the BPE tokenizers it loads. It is safe for concurrent use.
type Tokenizer struct {
	// From tokenizer_config.json (or GGUF metadata); zero when absent.
	BOSToken     string // "bos_token"
	EOSToken     string // "eos_token"
	PadToken     string // "pad_token"
	UnkToken     string // "unk_token"
	AddBOS       bool   // "add_bos_token": informational; Encode follows the post-processor
	AddEOS       bool   // "add_eos_token": likewise
	ChatTemplate string // "chat_template" (the "default" one when the config lists several)
	// ChatTemplates holds every named template when the config gives a list.
	ChatTemplates map[string]string

	model      *bpe
	normalizer normalizer     // nil: none
	preTok     []preTokenizer // steps, Sequences flattened; empty: the whole piece is one word
	post       postProcessor  // nil: none
	decoder    decoder        // nil: tokens joined with " "
	// byteFallbackDec: the decoder has a ByteFallback step (stream.go).
	byteFallbackDec bool

	added       []*AddedToken         // in file order
	addedByID   map[int32]*AddedToken // id → token (the last one wins)
	addedByText map[string]int32      // content → id
	decodeText  map[int32]string      // normalized content of normalized added tokens
	special     map[string]bool       // contents of special added tokens
	rawSet      *addedSet             // tokens matched on the raw input
	normSet     *addedSet             // tokens matched on normalized text
	idToTok     map[int32]string      // model vocab, reversed
	maxID       int32                 // largest id of any token
	eos         []int32               // extra eos ids (GGUF eot/eom); see EOS
	bosID       int32                 // set by FromGGUF; -1: look BOSToken up
	pool        sync.Pool             // *workspace
}

// workspace is the scratch memory of one Encode call.
type workspace struct {
	sp          splitter
	segs, segs2 []segment
	pa, pb      []piece
	syms        []int32
	ranks, news []int32
	prev, next  []int32
	alive       []bool
	heap        mergeHeap
}

func (t *Tokenizer) getWS() *workspace {
	if ws, ok := t.pool.Get().(*workspace); ok {
		return ws
	}
	return &workspace{}
}

// Encode returns the ids of text. With addSpecial the post-processor's
// special tokens (e.g. Llama's BOS) are added, as tokenizers'
// encode(text, add_special_tokens=True) does. Special-token text inside
// text (e.g. "<|im_start|>") is always matched as that token. Text that is
// not valid UTF-8 is an *InvalidUTF8Error.
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, &InvalidUTF8Error{Offset: firstInvalid(text)}
	}
	ws := t.getWS()
	defer t.pool.Put(ws)
	ids := make([]int32, 0, len(text)/3+4)
	var err error
	ws.segs = t.rawSet.segments(ws.segs[:0], text)
	for _, sg := range ws.segs {
		if sg.id >= 0 {
			ids = append(ids, sg.id)
			continue
		}
		sub := text[sg.start:sg.end]
		if t.normalizer != nil {
			sub = t.normalizer.normalize(sub)
		}
		ws.segs2 = t.normSet.segments(ws.segs2[:0], sub)
		for _, s2 := range ws.segs2 {
			if s2.id >= 0 {
				ids = append(ids, s2.id)
				continue
			}
			p := piece{s: sub[s2.start:s2.end], atStart: sg.start == 0 && s2.start == 0}
			if ids, err = t.encodePiece(ids, p, ws); err != nil {
				return nil, err
			}
		}
	}
	if addSpecial && t.post != nil {
		ids = t.post.process(ids)
	}
	return ids, nil
}

// encodePiece pre-tokenizes p and appends the model's ids of each word.
func (t *Tokenizer) encodePiece(ids []int32, p piece, ws *workspace) ([]int32, error) {
	a, b := append(ws.pa[:0], p), ws.pb
	for _, step := range t.preTok {
		b = b[:0]
		for _, q := range a {
			b = step.split(&ws.sp, b, q)
		}
		a, b = b, a
	}
	var err error
	for _, q := range a {
		if ids, err = t.model.tokenize(ids, q.s, ws); err != nil {
			break
		}
	}
	ws.pa, ws.pb = a, b
	return ids, err
}

func firstInvalid(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(s)
}

// Decode returns the text of ids. With skipSpecial, special tokens are
// left out. Ids that name no token are skipped, as in tokenizers.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		tok, ok := t.Token(id)
		if !ok || (skipSpecial && t.special[tok]) {
			continue
		}
		toks = append(toks, tok)
	}
	if t.decoder == nil {
		return strings.Join(toks, " "), nil
	}
	return strings.Join(t.decoder.decodeChain(toks), ""), nil
}

// TokenID returns the id of the token whose text is s (added tokens first,
// then the model's vocab).
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	if id, ok := t.addedByText[s]; ok {
		return id, true
	}
	id, ok := t.model.vocab[s]
	return id, ok
}

// Token returns the text of token id (for a normalized added token, its
// normalized text, as tokenizers' id_to_token).
func (t *Tokenizer) Token(id int32) (string, bool) {
	if s, ok := t.decodeText[id]; ok {
		return s, true
	}
	if a, ok := t.addedByID[id]; ok {
		return a.Content, true
	}
	s, ok := t.idToTok[id]
	return s, ok
}

// VocabSize is one more than the largest token id (added tokens included):
// the number of rows an embedding table needs.
func (t *Tokenizer) VocabSize() int { return int(t.maxID) + 1 }

// IsSpecial reports whether id is a special added token (e.g. <|im_end|>).
func (t *Tokenizer) IsSpecial(id int32) bool {
	a, ok := t.addedByID[id]
	return ok && a.Special
}

// AddedTokens returns the added tokens, ordered by id.
func (t *Tokenizer) AddedTokens() []AddedToken {
	out := make([]AddedToken, 0, len(t.addedByID))
	for _, a := range t.addedByID {
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// BOS returns the beginning-of-sequence token id, if the config names one.
func (t *Tokenizer) BOS() (int32, bool) {
	if t.bosID >= 0 {
		return t.bosID, true
	}
	if t.BOSToken == "" {
		return 0, false
	}
	return t.TokenID(t.BOSToken)
}

// EOS returns the end-of-sequence ids: the config's eos token and, from a
// GGUF file, the end-of-turn tokens too. Generation stops at any of them.
func (t *Tokenizer) EOS() []int32 {
	out := append([]int32(nil), t.eos...)
	if t.EOSToken != "" {
		if id, ok := t.TokenID(t.EOSToken); ok && !containsID(out, id) {
			out = append([]int32{id}, out...)
		}
	}
	return out
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
