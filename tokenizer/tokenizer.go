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
	maxTokOnce  sync.Once
	maxTokBytes int // see MaxTokenBytes
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
	return t.EncodeWith(text, EncodeOptions{AddSpecial: addSpecial})
}

// EncodeOptions tune EncodeWith.
type EncodeOptions struct {
	// AddSpecial adds the post-processor's special tokens (Encode's
	// addSpecial).
	AddSpecial bool
	// Literal are byte ranges of the text [Start, End) encoded as plain
	// text: special tokens' text inside them is not matched as those
	// tokens (tokenizers' split_special_tokens, for these ranges), so
	// "<|im_end|>" in a user's message stays text. A special token
	// partly inside a range is text too. Other added tokens are matched.
	Literal []Range
	// Limit, when > 0, stops encoding once more than Limit ids are out:
	// the result then has more than Limit ids, the first ones of the
	// text, and is not the whole text's (nor post-processed). A caller
	// that refuses longer texts spends no more than that.
	Limit int
}

// Range is the byte range [Start, End) of a text.
type Range struct{ Start, End int }

// EncodeWith is Encode with options: literal ranges and a limit.
func (t *Tokenizer) EncodeWith(text string, o EncodeOptions) ([]int32, error) {
	if !utf8.ValidString(text) {
		return nil, &InvalidUTF8Error{Offset: firstInvalid(text)}
	}
	ws := t.getWS()
	defer t.pool.Put(ws)
	over := func(ids []int32) bool { return o.Limit > 0 && len(ids) > o.Limit }
	ids := make([]int32, 0, min(len(text)/3, max(o.Limit, 0)+1)+4)
	var err error
	ws.segs = t.rawSet.segments(ws.segs[:0], text)
	if len(o.Literal) > 0 {
		ws.segs = t.literal(ws.segs, o.Literal)
	}
	for _, sg := range ws.segs {
		if sg.id >= 0 {
			ids = append(ids, sg.id)
			if over(ids) {
				return ids, nil
			}
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
				if over(ids) {
					return ids, nil
				}
				continue
			}
			p := piece{s: sub[s2.start:s2.end], atStart: sg.start == 0 && s2.start == 0}
			if ids, err = t.encodePiece(ids, p, ws, o.Limit); err != nil {
				return nil, err
			}
			if over(ids) {
				return ids, nil
			}
		}
	}
	if o.AddSpecial && t.post != nil {
		ids = t.post.process(ids)
	}
	return ids, nil
}

// literal turns the special tokens of segs that overlap a literal range
// into plain text, merged with the plain text around them.
func (t *Tokenizer) literal(segs []segment, lit []Range) []segment {
	inLiteral := func(sp span) bool {
		for _, r := range lit {
			if sp.start < r.End && r.Start < sp.end {
				return true
			}
		}
		return false
	}
	out := segs[:0]
	for _, sg := range segs {
		if sg.id >= 0 {
			if a := t.addedByID[sg.id]; a != nil && a.Special && inLiteral(sg.span) {
				sg.id = -1
			}
		}
		if n := len(out); n > 0 && sg.id < 0 && out[n-1].id < 0 && out[n-1].end == sg.start {
			out[n-1].end = sg.end
			continue
		}
		out = append(out, sg)
	}
	return out
}

// encodePiece pre-tokenizes p and appends the model's ids of each word.
// With limit > 0 it stops once ids holds more than limit.
func (t *Tokenizer) encodePiece(ids []int32, p piece, ws *workspace, limit int) ([]int32, error) {
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
		if ids, err = t.model.tokenize(ids, q.s, ws); err != nil || limit > 0 && len(ids) > limit {
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

// MaxTokenBytes bounds the bytes of text one token stands for: a text
// of n bytes encodes to at least n/MaxTokenBytes tokens. It is the
// longest token (in the vocabulary's spelling or as decoded bytes),
// times 4 when a normalizer may shorten the text first.
func (t *Tokenizer) MaxTokenBytes() int {
	t.maxTokOnce.Do(func() {
		n := 1
		for id, s := range t.idToTok {
			_, b := t.TokenBytes(id)
			n = max(n, len(s), len(b))
		}
		for _, a := range t.added {
			n = max(n, len(a.Content))
		}
		if t.normalizer != nil {
			n *= 4
		}
		t.maxTokBytes = n
	})
	return t.maxTokBytes
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
