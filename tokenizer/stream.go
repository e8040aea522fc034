package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// StreamDecoder turns generated ids into text one id at a time, emitting
// only complete UTF-8: a token that ends inside a character (a byte-level or
// byte-fallback piece of it) waits for the tokens that complete it. The text
// of all deltas plus Flush equals Decode of all the ids.
//
// It is vLLM's incremental detokenization: the window ids[prefix:] is
// decoded, and the part past the text of ids[prefix:read] is new once it
// grows and does not end in U+FFFD. Decoding a window rather than one token
// keeps decoders that look at neighbours (Strip, Metaspace) right. One
// addition: with a ByteFallback decoder nothing is emitted while the last
// token is a byte token <0xXX>, because tokenizers decodes a run of byte
// tokens as a whole (an invalid run becomes one U+FFFD per byte, even for
// bytes that were valid text alone), so the run must be complete first.
type StreamDecoder struct {
	// SkipSpecial leaves special tokens out (default true).
	SkipSpecial bool

	t      *Tokenizer
	ids    []int32 // ids[prefix:] of the stream; older ids are dropped
	prefix int     // start of the decode window in ids
	read   int     // ids before read have been emitted
}

// NewDecoder returns a StreamDecoder that skips special tokens.
func (t *Tokenizer) NewDecoder() *StreamDecoder {
	return &StreamDecoder{SkipSpecial: true, t: t}
}

// Add appends id and returns the text it completes (often "", e.g. for the
// first bytes of a multi-byte character).
func (d *StreamDecoder) Add(id int32) string {
	d.ids = append(d.ids, id)
	tok, ok := d.t.Token(id)
	if !ok || (d.SkipSpecial && d.t.special[tok]) {
		return "" // a token Decode leaves out changes nothing
	}
	if _, isByte := parseByteToken(tok); isByte && d.t.byteFallbackDec {
		return ""
	}
	prefixText, _ := d.t.Decode(d.ids[d.prefix:d.read], d.SkipSpecial)
	newText, _ := d.t.Decode(d.ids[d.prefix:], d.SkipSpecial)
	if len(newText) <= len(prefixText) || strings.HasSuffix(newText, "\uFFFD") {
		return ""
	}
	delta := newText[commonStart(prefixText, newText):]
	d.prefix, d.read = d.read, len(d.ids)
	// Drop what no window will look at again.
	if d.prefix > 64 {
		n := copy(d.ids, d.ids[d.prefix:])
		d.ids = d.ids[:n]
		d.read -= d.prefix
		d.prefix = 0
	}
	return delta
}

// Flush returns the text still held back (e.g. an unfinished character,
// as U+FFFD) and resets the decoder.
func (d *StreamDecoder) Flush() string {
	prefixText, _ := d.t.Decode(d.ids[d.prefix:d.read], d.SkipSpecial)
	newText, _ := d.t.Decode(d.ids[d.prefix:], d.SkipSpecial)
	d.ids, d.prefix, d.read = d.ids[:0], 0, 0
	if len(newText) <= len(prefixText) {
		return ""
	}
	return newText[commonStart(prefixText, newText):]
}

// commonStart is where the new text begins: len(prev), as in vLLM, moved
// on to a character boundary should next not extend prev.
func commonStart(prev, next string) int {
	i := len(prev)
	for i < len(next) && !utf8.RuneStart(next[i]) {
		i++
	}
	return min(i, len(next))
}
