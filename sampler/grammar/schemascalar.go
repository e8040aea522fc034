// Strings and numbers: the byte-at-a-time lexers of a schema state's
// scalar frames.

package grammar

import (
	"unicode/utf8"
)

// lex results
const (
	lexReject = iota
	lexQuote  // the closing quote
	lexStart  // the first byte of a character that continues
	lexChar   // a whole one-byte character (or a finished escape)
	lexMid    // a continuation byte, the character not finished
	lexEnd    // the last byte of a multi-byte character or escape
)

func isHexByte(b byte) bool { return isHex(b) }

func hexVal(b byte) rune {
	switch {
	case b <= '9':
		return rune(b - '0')
	case b >= 'a':
		return rune(b-'a') + 10
	}
	return rune(b-'A') + 10
}

// lex reads one byte of string text; escapes says whether '\' may
// start an escape. f.cp holds the character when it is finished.
func lex(f *frame, b byte, escapes bool) int {
	switch f.lx {
	case lxChar:
		switch {
		case b == '"':
			return lexQuote
		case b == '\\':
			if !escapes {
				return lexReject
			}
			f.lx = lxEsc
			return lexStart
		case b < 0x20 || b == 0x7F:
			return lexReject
		case b < 0x80:
			f.cp = rune(b)
			return lexChar
		case b >= 0xC2 && b <= 0xDF:
			f.ulen = 2
			f.lx, f.more, f.cmin, f.cmax, f.cp = lxUTF, 1, 0x80, 0xBF, rune(b&0x1F)
		case b >= 0xE0 && b <= 0xEF: // no overlong forms, no surrogates
			f.ulen = 3
			f.lx, f.more, f.cmin, f.cmax, f.cp = lxUTF, 2, 0x80, 0xBF, rune(b&0x0F)
			if b == 0xE0 {
				f.cmin = 0xA0
			} else if b == 0xED {
				f.cmax = 0x9F
			}
		case b >= 0xF0 && b <= 0xF4:
			f.ulen = 4
			f.lx, f.more, f.cmin, f.cmax, f.cp = lxUTF, 3, 0x80, 0xBF, rune(b&0x07)
			if b == 0xF0 {
				f.cmin = 0x90
			} else if b == 0xF4 {
				f.cmax = 0x8F
			}
		default:
			return lexReject
		}
		return lexStart
	case lxUTF:
		if b < f.cmin || b > f.cmax {
			return lexReject
		}
		f.cp = f.cp<<6 | rune(b&0x3F)
		f.cmin, f.cmax = 0x80, 0xBF
		if f.more--; f.more == 0 {
			f.lx = lxChar
			return lexEnd
		}
		return lexMid
	case lxEsc:
		switch b {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			f.lx = lxChar
			return lexEnd
		case 'u':
			f.lx, f.more, f.cp = lxHex, 4, 0
			return lexMid
		}
		return lexReject
	case lxHex:
		if !isHexByte(b) {
			return lexReject
		}
		f.cp = f.cp<<4 | hexVal(b)
		if f.more--; f.more == 0 {
			if f.cp >= 0xD800 && f.cp <= 0xDFFF {
				return lexReject // no surrogate escapes
			}
			f.lx = lxChar
			return lexEnd
		}
		if f.more == 2 && f.cp >= 0xD8 && f.cp <= 0xDF {
			return lexReject // the escape heads for a surrogate
		}
		return lexMid
	}
	return lexReject
}

// runeSpan is the code points a character begun in f can still become.
func runeSpan(f *frame) (lo, hi rune) {
	k := uint(f.more) * 6
	lo, hi = f.cp<<k, f.cp<<k|(1<<k-1)
	floor := [...]rune{0, 0, 0x80, 0x800, 0x10000}[f.ulen]
	return max(lo, floor), min(hi, utf8.MaxRune)
}

// anyIn reports whether a code point in [lo, hi] moves the DFA from q.
func (d *dfa) anyIn(q int32, lo, hi rune) bool {
	for s, r := range d.starts {
		end := rune(utf8.MaxRune)
		if s+1 < len(d.starts) {
			end = d.starts[s+1] - 1
		}
		if end >= lo && r <= hi && d.next[q][s] >= 0 {
			return true
		}
	}
	return false
}

func stepString(f *frame, b byte) int {
	n := f.n
	r := lex(f, b, n.pat == nil)
	switch r {
	case lexReject:
		return rReject
	case lexQuote:
		if int(f.count) < n.minLen || n.pat != nil && !n.pat.accept[f.dfa] {
			return rReject
		}
		return rDone
	case lexStart, lexChar:
		if n.maxLen >= 0 && int(f.count) >= n.maxLen {
			return rReject
		}
		f.count++
	}
	if n.pat == nil {
		return rAccept
	}
	switch r {
	case lexChar, lexEnd:
		q := n.pat.step(f.dfa, f.cp)
		if q < 0 {
			return rReject
		}
		f.dfa = q
	default: // a character begun: some ending must move the DFA
		lo, hi := runeSpan(f)
		if !n.pat.anyIn(f.dfa, lo, hi) {
			return rReject
		}
	}
	return rAccept
}

const fracDigits = 6

func stepNumber(f *frame, b byte) int {
	n := f.n
	g := *f
	ok := true
	d := int64(b - '0')
	isDigit := b >= '0' && b <= '9'
	switch f.st {
	case stStart, nsMinus:
		switch {
		case b == '-' && f.st == stStart:
			g.st, g.neg = nsMinus, true
		case b == '0':
			g.st, g.intLen = nsZero, 1
		case isDigit:
			g.st, g.intLen, g.intVal = nsInt, 1, d
		default:
			ok = false
		}
	case nsZero, nsInt:
		switch {
		case isDigit && f.st == nsInt && int(f.intLen) < n.maxInt:
			g.intLen, g.intVal = f.intLen+1, f.intVal*10+d
		case b == '.' && !n.integer:
			g.st = nsDot
		default:
			ok = false
		}
	case nsDot, nsFrac:
		if isDigit && f.fracLen < fracDigits {
			g.st, g.fracLen, g.fracVal = nsFrac, f.fracLen+1, f.fracVal*10+d
		} else {
			ok = false
		}
	default:
		ok = false
	}
	if ok && numRest(n, &g) < inf {
		*f = g
		return rAccept
	}
	if numRest(n, f) == 0 {
		return rEnded
	}
	return rReject
}

// numRest is the fewest bytes that finish the number begun in f within
// its bounds (0: it may end here), inf when none.
func numRest(n *node, f *frame) int {
	if f.st == stStart {
		return min(numFrom(n, f, false), 1+numFrom(n, f, true))
	}
	return numFrom(n, f, f.neg)
}

func numFrom(n *node, f *frame, neg bool) int {
	S := n.scale
	F := fracDigits
	if n.integer {
		F = 0
	}
	// the magnitudes allowed
	mlo, mhi := max(0, n.lo), n.hi
	if neg {
		mlo, mhi = max(0, -n.hi), -n.lo
	}
	if mhi < mlo {
		return inf
	}
	// fits: is there a value a + j·step ≤ b within [mlo, mhi]?
	fits := func(a, b, step int64) bool {
		x := max(a, mlo)
		x = a + (x-a+step-1)/step*step
		return x <= min(b, mhi)
	}
	best := inf
	// option: integer part I in [ilo, ihi], then f fraction digits (f ≥ fmin)
	try := func(cost int, ilo, ihi int64, fmin int) {
		for fd := fmin; fd <= F; fd++ {
			c := cost
			if fd > 0 {
				c += 1 + fd
			}
			if c >= best {
				return
			}
			step := pow10(F - fd)
			if fits(ilo*S, ihi*S+(pow10(fd)-1)*step, step) {
				best = c
				return
			}
		}
	}
	st := f.st
	if st == stStart {
		st = nsMinus
	}
	switch st {
	case nsMinus:
		try(1, 0, 9, 0)
		for k := 2; k <= n.maxInt; k++ {
			try(k, pow10(k-1), pow10(k)-1, 0)
		}
	case nsZero:
		try(0, 0, 0, 0)
	case nsInt:
		for k := 0; k <= n.maxInt-int(f.intLen); k++ {
			p := pow10(k)
			try(k, f.intVal*p, f.intVal*p+p-1, 0)
		}
	case nsDot, nsFrac:
		fl := int(f.fracLen)
		base := f.intVal*S + f.fracVal*pow10(F-fl)
		for fd := max(fl, 1); fd <= F; fd++ {
			step := pow10(F - fd)
			if fits(base, base+(pow10(fd-fl)-1)*step, step) {
				c := fd - fl
				if st == nsDot {
					c = fd
				}
				return c
			}
		}
	}
	return best
}
