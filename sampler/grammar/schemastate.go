package grammar

import "unicode/utf8"

// The runtime of a compiled schema: a stack of frames, one per value
// being written (frame 0 is the document). A step reads one byte; it may
// end the value on top (a number or literal ends at the byte after it),
// close one and hand the byte on, or push the next value. Writes go
// through mut, which keeps an undo log while a trie walk tries tokens, so
// a walk restores the state instead of copying it.

const maxStack = MaxSchemaNest + 2 // the document frame, the containers, a scalar

// frame states
const (
	// every kind: not started
	stStart uint8 = iota
	// object
	osOpen  // after '{'
	osKey   // in a key
	osColon // after a key
	osValue // a value above
	osAfter // after a value
	osComma // after ','
	// array
	asOpen
	asValue
	asAfter
	// string
	ssIn
	// number
	nsMinus
	nsZero
	nsInt
	nsDot
	nsFrac
	// literal
	lsIn
	// document
	rsValue
	rsDone
)

// lexer states inside a string or key
const (
	lxChar uint8 = iota // at a character boundary
	lxUTF               // inside a multi-byte character
	lxEsc               // after '\'
	lxHex               // inside \uXXXX
)

type frame struct {
	n          *node
	st, lx     uint8
	ulen       uint8 // lxUTF: the character's length in bytes
	more       uint8 // continuation bytes (lxUTF) or hex digits (lxHex) still due
	cmin, cmax uint8 // the next continuation byte's range
	neg, other bool  // number: '-'; key: no property name matches
	intLen     uint8
	fracLen    uint8
	cp         rune  // the character being read (pattern strings)
	dfa        int32 // pattern state
	count      int32 // string characters, array items, object properties written
	key        int32 // object: the property whose value is written; -1 additional
	lo, hi     int32 // key or literal: texts still matching
	pos        int32 // their bytes matched
	seen       uint64
	intVal     int64
	fracVal    int64
}

type undo struct {
	i int
	f frame
}

type state struct {
	frames  [maxStack]frame
	depth   int
	logging bool
	base    int    // depth at the start of the step
	saved   uint32 // frames below base already logged in this step
	log     []undo
}

func newState(root *node) state {
	var s state
	s.frames[0] = frame{st: rsValue}
	s.frames[1] = startFrame(root)
	s.depth = 2
	return s
}

func startFrame(n *node) frame {
	f := frame{n: n}
	if n.kind == kLit {
		f.hi = int32(len(n.texts))
	}
	return f
}

func (s *state) mut(i int) *frame {
	if s.logging && i < s.base && s.saved&(1<<i) == 0 {
		s.log = append(s.log, undo{i, s.frames[i]})
		s.saved |= 1 << i
	}
	return &s.frames[i]
}

// begin starts a step that undo can take back.
func (s *state) begin() (mark, depth int) {
	s.logging, s.base, s.saved = true, s.depth, 0
	return len(s.log), s.depth
}

func (s *state) undo(mark, depth int) {
	for i := len(s.log) - 1; i >= mark; i-- {
		s.frames[s.log[i].i] = s.log[i].f
	}
	s.log = s.log[:mark]
	s.depth = depth
}

func (s *state) done() bool { return s.depth == 1 && s.frames[0].st == rsDone }

// step results
const (
	rReject = iota
	rAccept
	rDone  // accepted, the frame is complete
	rEnded // the frame was complete before the byte: the parent reads it
	rRetry // the frame pushed or became another: read the byte again
)

// step reads byte b; false if refused (the state is then garbage: undo it).
func (s *state) step(b byte) bool {
	for {
		if s.depth <= 1 {
			return false
		}
		// The frame is stepped on a copy: a refused byte (most of a
		// walk's) writes and logs nothing.
		i := s.depth - 1
		g := s.frames[i]
		r := s.stepFrame(i, &g, b)
		if r == rReject {
			return false
		}
		*s.mut(i) = g
		switch r {
		case rAccept:
			return true
		case rDone:
			s.pop()
			return true
		case rEnded:
			s.pop()
		case rRetry:
		default:
			return false
		}
	}
}

func (s *state) push(n *node) bool {
	if s.depth == maxStack {
		return false
	}
	*s.mut(s.depth) = startFrame(n)
	s.depth++
	return true
}

// pop ends the top value; its parent moves past it.
func (s *state) pop() {
	s.depth--
	p := s.mut(s.depth - 1)
	switch {
	case p.st == rsValue:
		p.st = rsDone
	case p.st == osValue || p.st == asValue:
		p.count++
		p.st = osAfter
		if p.n.kind == kArray {
			p.st = asAfter
		}
	}
}

func (s *state) stepFrame(i int, f *frame, b byte) int {
	n := f.n
	switch n.kind {
	case kAnyOf:
		k := n.pick[b]
		if k < 0 {
			return rReject
		}
		*f = startFrame(n.branches[k])
		return rRetry
	case kObject:
		return s.stepObject(i, f, b)
	case kArray:
		switch f.st {
		case stStart:
			if b != '[' || i > MaxSchemaNest {
				return rReject
			}
			f.st = asOpen
			return rAccept
		case asOpen:
			if b == ']' {
				if n.minItems > 0 {
					return rReject
				}
				return rDone
			}
			if n.maxItems == 0 {
				return rReject
			}
			f.st = asValue
			if !s.push(n.items) {
				return rReject
			}
			return rRetry
		case asAfter:
			switch {
			case b == ']' && int(f.count) >= n.minItems:
				return rDone
			case b == ',' && int(f.count) < n.maxItems:
				f.st = asValue
				if !s.push(n.items) {
					return rReject
				}
				return rAccept
			}
		}
		return rReject
	case kString:
		if f.st == stStart {
			if b != '"' {
				return rReject
			}
			f.st, f.lx = ssIn, lxChar
			return rAccept
		}
		return stepString(f, b)
	case kNumber:
		return stepNumber(f, b)
	case kLit:
		lo, hi := f.lo, f.hi
		for lo < hi {
			if t := n.texts[lo]; len(t) > int(f.pos) && t[f.pos] == b {
				break
			}
			lo++
		}
		end := lo
		for end < hi {
			if t := n.texts[end]; len(t) <= int(f.pos) || t[f.pos] != b {
				break
			}
			end++
		}
		if lo == end {
			if len(n.texts[f.lo]) == int(f.pos) {
				return rEnded
			}
			return rReject
		}
		f.lo, f.hi, f.pos, f.st = lo, end, f.pos+1, lsIn
		if end-lo == 1 && len(n.texts[lo]) == int(f.pos) {
			return rDone
		}
		return rAccept
	}
	return rReject
}

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

func (s *state) stepObject(i int, f *frame, b byte) int {
	n := f.n
	switch f.st {
	case stStart:
		if b != '{' || i > MaxSchemaNest {
			return rReject
		}
		f.st = osOpen
		return rAccept
	case osOpen, osComma:
		if b == '}' && f.st == osOpen {
			if n.required&^f.seen != 0 {
				return rReject
			}
			return rDone
		}
		if b != '"' || !canAddKey(f) {
			return rReject
		}
		f.st, f.lx, f.lo, f.hi, f.pos = osKey, lxChar, 0, int32(len(n.names)), 0
		f.other = len(n.names) == 0
		return rAccept
	case osKey:
		// No escapes in the keys of an object with properties: "\u0061"
		// would be property "a" to a validator, not another key.
		r := lex(f, b, n.additional != nil && len(n.names) == 0)
		switch r {
		case lexReject:
			return rReject
		case lexQuote:
			if !f.other && f.lo < f.hi && len(n.names[f.lo]) == int(f.pos) {
				if f.seen&(1<<f.lo) != 0 {
					return rReject
				}
				f.key = f.lo
				f.seen |= 1 << f.lo
			} else if n.additional != nil {
				f.key = -1
			} else {
				return rReject
			}
			f.st = osColon
			return rAccept
		}
		if f.other {
			return rAccept
		}
		lo, hi := f.lo, f.hi
		for lo < hi && !(len(n.names[lo]) > int(f.pos) && n.names[lo][f.pos] == b) {
			lo++
		}
		end := lo
		for end < hi && len(n.names[end]) > int(f.pos) && n.names[end][f.pos] == b {
			end++
		}
		f.lo, f.hi, f.pos = lo, end, f.pos+1
		if lo == end {
			if n.additional == nil {
				return rReject
			}
			f.other = true
			return rAccept
		}
		if n.additional == nil {
			for k := lo; k < end; k++ {
				if f.seen&(1<<k) == 0 {
					return rAccept
				}
			}
			return rReject
		}
		return rAccept
	case osColon:
		if b != ':' {
			return rReject
		}
		f.st = osValue
		v := n.additional
		if f.key >= 0 {
			v = n.props[f.key]
		}
		if !s.push(v) {
			return rReject
		}
		return rAccept
	case osAfter:
		switch {
		case b == '}' && n.required&^f.seen == 0:
			return rDone
		case b == ',' && canAddKey(f):
			f.st = osComma
			return rAccept
		}
	}
	return rReject
}

// canAddKey: a property not written yet, or any other key, may come.
func canAddKey(f *frame) bool {
	n := f.n
	return n.additional != nil || len(n.names) < 64 && f.seen != 1<<len(n.names)-1 || len(n.names) == 64 && f.seen != ^uint64(0)
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
