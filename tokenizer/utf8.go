package tokenizer

import "unicode/utf8"

// appendLossy appends b to dst as valid UTF-8, replacing each maximal
// invalid subsequence by one U+FFFD, exactly as Rust's
// String::from_utf8_lossy (and Python's errors="replace") do. Go's
// strings.ToValidUTF8 differs: it collapses a whole run of bad bytes.
func appendLossy(dst []byte, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size != 1 {
			dst = append(dst, b[i:i+size]...)
			i += size
			continue
		}
		// Invalid: skip the longest prefix of b[i:] that could start a valid
		// sequence (the "maximal subpart"), at least one byte.
		dst = append(dst, "\uFFFD"...)
		i += maximalSubpart(b[i:])
	}
	return dst
}

// maximalSubpart returns the length (≥ 1) of the longest prefix of b that is
// a proper prefix of some valid UTF-8 encoding (Unicode §3.9, D93b).
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF) // allowed range of the second byte
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if k == 0 {
			if x < lo || x > hi {
				break
			}
		} else if x < 0x80 || x > 0xBF {
			break
		}
		n++
	}
	return n
}

// lossyString is appendLossy into a new string.
func lossyString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return string(appendLossy(make([]byte, 0, len(b)+8), b))
}
