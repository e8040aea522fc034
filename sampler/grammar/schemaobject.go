// Objects: a schema state's object frames, their keys (property names or,
// under additionalProperties, any string not yet written) and values.

package grammar

import (
	"unicode/utf8"
)

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
		f.kstart = int32(len(s.keys))
		return rAccept
	case osKey:
		lx := f.lx
		r := lex(f, b, keyEscapes(n))
		switch r {
		case lexReject:
			return rReject
		case lexQuote:
			if !f.other && f.lo < f.hi && len(n.names[f.lo]) == int(f.pos) {
				if !canWrite(n, f, f.lo) {
					return rReject
				}
				f.key = f.lo
				f.seen |= 1 << f.lo
			} else if n.additional != nil {
				if s.written(f) {
					return rReject
				}
				s.recs = append(s.recs, keyRec{f.klast, f.kstart, int32(len(s.keys))})
				f.klast = int32(len(s.recs))
				f.kempty = f.kempty || int(f.kstart) == len(s.keys)
				f.key = -1
			} else {
				return rReject
			}
			f.st = osColon
			return rAccept
		}
		if n.additional != nil {
			if lx == lxChar && b != '\\' {
				s.keys = append(s.keys, b) // most bytes: a character as it is
			} else {
				s.keyByte(f, lx, b)
			}
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
				if canWrite(n, f, k) {
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

// keyEscapes reports whether the keys of object n may hold escapes: only
// when it has no property names, which an escape could spell another
// way ("\u0061" is property "a" to a validator, not another key).
func keyEscapes(n *node) bool { return n.additional != nil && len(n.names) == 0 }

// canAddKey: a property not written yet (nor passed, in schema order),
// or any other key, may come.
func canAddKey(f *frame) bool {
	n := f.n
	u := used(n, f)
	return n.additional != nil || len(n.names) < 64 && u != 1<<len(n.names)-1 || len(n.names) == 64 && u != ^uint64(0)
}

// used is the property names of f's object that may no longer come: the
// ones written and, in schema order, the ones listed before the last.
func used(n *node, f *frame) uint64 {
	if n.before != nil && f.seen != 0 {
		return f.seen | n.before[f.key]
	}
	return f.seen
}

// canWrite reports whether property names[k] may come next: not used,
// and, in schema order, no required property before it left out.
func canWrite(n *node, f *frame, k int32) bool {
	if used(n, f)&(1<<k) != 0 {
		return false
	}
	return n.before == nil || n.required&n.before[k]&^f.seen == 0
}

// keyByte adds what byte b of a key decodes to (lx: the lexer's state
// before it) to the key arena: a character's bytes as they are, an
// escape's character once it is complete.
func (s *state) keyByte(f *frame, lx uint8, b byte) {
	switch lx {
	case lxChar:
		if b != '\\' {
			s.keys = append(s.keys, b)
		}
	case lxUTF:
		s.keys = append(s.keys, b)
	case lxEsc:
		if c, ok := unescape[b]; ok {
			s.keys = append(s.keys, c)
		}
	case lxHex:
		if f.lx == lxChar { // the escape's last digit
			s.keys = utf8.AppendRune(s.keys, f.cp)
		}
	}
}

var unescape = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// written reports whether the key being written in f (not a property
// name) is one of its object's keys already.
func (s *state) written(f *frame) bool {
	k := s.keys[f.kstart:]
	for r := f.klast; r > 0; r = s.recs[r-1].prev {
		rec := s.recs[r-1]
		if string(s.keys[rec.start:rec.end]) == string(k) {
			return true
		}
	}
	return false
}
