package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder turns a list of token strings back into text pieces (tokenizers'
// Decoder::decode_chain); the pieces are concatenated at the end.
type decoder interface {
	decodeChain(toks []string) []string
}

// decoderSeq applies its decoders in order ("Sequence").
type decoderSeq []decoder

func (q decoderSeq) decodeChain(toks []string) []string {
	for _, d := range q {
		toks = d.decodeChain(toks)
	}
	return toks
}

// byteLevelDec maps the byte-level alphabet back to bytes and decodes them
// as UTF-8, bad sequences becoming U+FFFD ("ByteLevel").
type byteLevelDec struct{}

func (byteLevelDec) decodeChain(toks []string) []string {
	var buf []byte
	for _, t := range toks {
		buf = byteLevelDecodeToken(buf, t)
	}
	return []string{lossyString(buf)}
}

// byteFallbackDec turns runs of <0xXX> tokens into the text of their bytes;
// a run that is not valid UTF-8 becomes one U+FFFD per byte
// ("ByteFallback").
type byteFallbackDec struct{}

func (byteFallbackDec) decodeChain(toks []string) []string {
	out := make([]string, 0, len(toks))
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range toks {
		if b, ok := parseByteToken(t); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

// parseByteToken parses "<0xXX>" as tokenizers does (6 bytes, "<0x" prefix,
// '>' suffix, the two middle bytes parsed by u8::from_str_radix(…, 16), which
// also accepts a leading '+').
func parseByteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	h := t[3:5]
	if h[0] == '+' {
		h = h[1:]
	}
	if h == "" || h[0] == '-' || h[0] == '+' {
		return 0, false
	}
	v, err := strconv.ParseUint(h, 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}

// fuseDec joins all tokens into one ("Fuse").
type fuseDec struct{}

func (fuseDec) decodeChain(toks []string) []string {
	return []string{strings.Join(toks, "")}
}

// stripDec removes up to start leading and stop trailing copies of content
// from every token ("Strip").
type stripDec struct {
	content     rune
	start, stop int
}

func (d stripDec) decodeChain(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		rs := []rune(t)
		lo := 0
		for k := 0; k < d.start && k < len(rs) && rs[k] == d.content; k++ {
			lo = k + 1
		}
		hi := len(rs)
		for k := 0; k < d.stop; k++ {
			j := len(rs) - k - 1
			if j < 0 || rs[j] != d.content {
				break
			}
			hi = j
		}
		if hi < lo {
			hi = lo
		}
		out[i] = string(rs[lo:hi])
	}
	return out
}

// replaceDec replaces every match of a pattern in each token ("Replace").
type replaceDec struct {
	m       matcher
	content string
}

func (d replaceDec) decodeChain(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = replaceNorm(d).normalize(t)
	}
	return out
}

// metaspaceDec turns the replacement back into spaces; in the first token
// it is dropped instead unless the prepend scheme is "never" ("Metaspace").
type metaspaceDec struct {
	replacement rune
	scheme      prependScheme
}

func (d metaspaceDec) decodeChain(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		var b strings.Builder
		for _, r := range t {
			if r == d.replacement {
				if i == 0 && d.scheme != prependNever {
					continue
				}
				r = ' '
			}
			b.WriteRune(r)
		}
		out[i] = b.String()
	}
	return out
}
