package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// gpt2Bytes maps the runes of a byte-level BPE vocabulary (GPT-2's
// bytes_to_unicode) back to their bytes.
var gpt2Bytes = func() map[rune]byte {
	m := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			m[rune(b)] = byte(b)
		} else {
			m[rune(256+n)] = byte(b)
			n++
		}
	}
	return m
}()

// TokenBytes is a token's text decoded alone (special tokens written
// out) and its bytes. A token that is part of a UTF-8 character decodes
// to U+FFFD; its bytes are then recovered from the vocabulary entry
// (byte-level BPE runes, or SentencePiece's <0xNN> byte tokens), as
// OpenAI's logprobs "bytes" field carries. An unknown id gives "", nil.
func (t *Tokenizer) TokenBytes(id int32) (string, []byte) {
	s, err := t.Decode([]int32{id}, false)
	if err != nil {
		return "", nil
	}
	if !strings.ContainsRune(s, utf8.RuneError) {
		return s, []byte(s)
	}
	raw, ok := t.Token(id)
	if !ok {
		return s, []byte(s)
	}
	if b, ok := byteToken(raw); ok {
		return s, []byte{b}
	}
	b := make([]byte, 0, len(raw))
	for _, r := range raw {
		c, ok := gpt2Bytes[r]
		if !ok {
			return s, []byte(s)
		}
		b = append(b, c)
	}
	return s, b
}

// Pieces is the bytes each token adds to a text when it follows other
// tokens, indexed by id (VocabSize entries): TokenBytes, with the space
// of a SentencePiece word start ("▁") that decoding drops at the start
// of a text.
func (t *Tokenizer) Pieces() [][]byte {
	out := make([][]byte, t.VocabSize())
	for id := range out {
		_, b := t.TokenBytes(int32(id))
		if raw, ok := t.Token(int32(id)); ok && strings.HasPrefix(raw, "▁") && (len(b) == 0 || b[0] != ' ') {
			b = append([]byte{' '}, b...)
		}
		out[id] = b
	}
	return out
}

// byteToken is a SentencePiece byte token, <0xNN>.
func byteToken(raw string) (byte, bool) {
	if len(raw) == 6 && strings.HasPrefix(raw, "<0x") && raw[5] == '>' {
		if v, err := strconv.ParseUint(raw[3:5], 16, 8); err == nil {
			return byte(v), true
		}
	}
	return 0, false
}
