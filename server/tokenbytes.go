package server

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vkllm/vkllm/tokenizer"
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

// tokenText is a token's text (special tokens written out) and its bytes.
// A token that is part of a UTF-8 character decodes to U+FFFD; its bytes
// are then recovered from the vocabulary entry (byte-level BPE runes, or
// SentencePiece's <0xNN> byte tokens), as OpenAI's "bytes" field carries.
func tokenText(tok *tokenizer.Tokenizer, id int32) (string, []byte) {
	s, err := tok.Decode([]int32{id}, false)
	if err != nil {
		return "", nil
	}
	if !strings.ContainsRune(s, utf8.RuneError) {
		return s, []byte(s)
	}
	raw, ok := tok.Token(id)
	if !ok {
		return s, []byte(s)
	}
	if len(raw) == 6 && strings.HasPrefix(raw, "<0x") && raw[5] == '>' {
		if v, err := strconv.ParseUint(raw[3:5], 16, 8); err == nil {
			return s, []byte{byte(v)}
		}
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
