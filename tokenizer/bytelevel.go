package tokenizer

// GPT-2's byte-level alphabet: every byte maps to one printable rune, so a
// byte string becomes a "word" of visible characters (space → 'Ġ', '\n' →
// 'Ċ'). The printable Latin-1 bytes map to themselves; the other 68 bytes
// map to U+0100 upwards in byte order (tokenizers' bytes_char()).

var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
	// byteToStr[b] is string(byteToRune[b]), to build words without allocating.
	byteToStr [256]string
)

func init() {
	n := rune(0)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = 256 + n
			n++
		}
	}
	for b, r := range byteToRune {
		runeToByte[r] = byte(b)
		byteToStr[b] = string(r)
	}
}

// byteLevelEncode maps every byte of s to its alphabet rune.
func byteLevelEncode(s string) string {
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		buf = append(buf, byteToStr[s[i]]...)
	}
	return string(buf)
}

// byteLevelDecodeToken appends the bytes a byte-level token stands for: each
// rune mapped back to its byte, or, if any rune is outside the alphabet (an
// added token such as "<think>\n"), the token's own UTF-8 bytes, as
// tokenizers' ByteLevel decoder does.
func byteLevelDecodeToken(dst []byte, tok string) []byte {
	start := len(dst)
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return append(dst[:start], tok...)
		}
		dst = append(dst, b)
	}
	return dst
}
