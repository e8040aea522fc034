package grammar

// The runtime of a compiled schema: a stack of frames, one per value
// being written (frame 0 is the document). A step reads one byte; it may
// end the value on top (a number or literal ends at the byte after it),
// close one and hand the byte on, or push the next value. Writes go
// through mut, which keeps an undo log while a trie walk tries tokens, so
// a walk restores the state instead of copying it.
//
// The keys of an object that are not property names (a property's is a
// bit of frame.seen) go to the state's key arena, so that none is
// written twice: the key being written is decoded into keys from
// frame.kstart, and each key written is a record in recs, chained per
// object from frame.klast. The arena only grows (a walk's undo cuts it
// back to the length it had), so a frame restored by undo finds its keys
// intact; it holds the keys of the reply, no more.

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
	kempty     bool  // object: the key "" is written (not a property name)
	intLen     uint8
	fracLen    uint8
	cp         rune  // the character being read (pattern strings)
	dfa        int32 // pattern state
	count      int32 // string characters, array items, object properties written
	key        int32 // object: the property whose value is written (the last one); -1 additional
	kstart     int32 // object: where the key being written begins in state.keys
	klast      int32 // object: its last other key's record in state.recs, plus one; 0: none
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
	keys    []byte   // the key arena: decoded keys (see above)
	recs    []keyRec // the keys written that are not property names
}

// keyRec is a key written, keys[start:end], after the object's record
// prev (plus one; 0: the first).
type keyRec struct{ prev, start, end int32 }

// mark is where undo takes a state back to.
type mark struct {
	log, depth int
	keys, recs int32
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
func (s *state) begin() mark {
	s.logging, s.base, s.saved = true, s.depth, 0
	return mark{len(s.log), s.depth, int32(len(s.keys)), int32(len(s.recs))}
}

func (s *state) undo(m mark) {
	for i := len(s.log) - 1; i >= m.log; i-- {
		s.frames[s.log[i].i] = s.log[i].f
	}
	s.log = s.log[:m.log]
	s.depth = m.depth
	if len(s.keys) != int(m.keys) {
		s.keys = s.keys[:m.keys]
	}
	if len(s.recs) != int(m.recs) {
		s.recs = s.recs[:m.recs]
	}
}

// share starts s as a scratch copy of t for a walk: the frames copied,
// the arena shared (the walk only appends past t's end, and cuts back to
// it).
func (s *state) share(t *state) {
	s.frames, s.depth = t.frames, t.depth
	s.keys, s.recs = t.keys, t.recs
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
