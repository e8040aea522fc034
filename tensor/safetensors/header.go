package safetensors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// entry is one tensor as the header describes it.
type entry struct {
	name       string
	offset     int64 // of its key in the header
	dtype      string
	shape      []int64
	begin, end int64 // data_offsets, relative to the data section
}

// headerError is a header problem at a byte offset inside the header.
type headerError struct {
	offset int64
	msg    string
}

func (e *headerError) Error() string { return fmt.Sprintf("at header byte %d: %s", e.offset, e.msg) }

// jsonWalker reads a JSON document token by token (encoding/json's
// Decoder), so that duplicate keys, exact field names and value types are
// checked as the reference implementation (serde) does, rather than
// merged or case-folded as json.Unmarshal would.
type jsonWalker struct {
	src []byte
	dec *json.Decoder
	at  int64 // where the last token read (or value skipped) starts
}

func newJSONWalker(src []byte) *jsonWalker {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	return &jsonWalker{src: src, dec: dec}
}

// fail makes a headerError at the start of the last token read.
func (w *jsonWalker) fail(format string, args ...any) error {
	return &headerError{offset: w.at, msg: fmt.Sprintf(format, args...)}
}

// next returns the next token; a syntax error becomes a headerError.
func (w *jsonWalker) next() (json.Token, error) {
	w.at = w.skipPast(",:")
	tok, err := w.dec.Token()
	if err == io.EOF {
		return nil, w.fail("unexpected end of JSON")
	}
	if err != nil {
		return nil, w.fail("invalid JSON: %v", err)
	}
	return tok, nil
}

// skipPast returns the offset of the first byte at or after the decoder's
// position that is neither whitespace nor one of extra.
func (w *jsonWalker) skipPast(extra string) int64 {
	off := w.dec.InputOffset()
	for off < int64(len(w.src)) {
		c := w.src[off]
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' && !strings.ContainsRune(extra, rune(c)) {
			break
		}
		off++
	}
	return off
}

// nextKeyOffset is where the next object key starts (past the comma before
// it), for error offsets.
func (w *jsonWalker) nextKeyOffset() int64 { return w.skipPast(",") }

// object walks an object whose '{' the caller expects next, calling field
// for each key (the value is still to be read). Duplicate keys fail.
func (w *jsonWalker) object(what string, field func(key string, keyOffset int64) error) error {
	tok, err := w.next()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return w.fail("%s is %s, want an object", what, describe(tok))
	}
	seen := map[string]bool{}
	for w.dec.More() {
		off := w.nextKeyOffset()
		tok, err := w.next()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok { // the decoder rejects non-string keys itself; kept for safety
			return w.fail("%s has a non-string key", what)
		}
		if seen[key] {
			return &headerError{offset: off, msg: fmt.Sprintf("%s has duplicate key %q", what, key)}
		}
		seen[key] = true
		if err := field(key, off); err != nil {
			return err
		}
	}
	_, err = w.next() // '}'
	return err
}

// skip reads and discards one value of any kind.
func (w *jsonWalker) skip() error {
	w.at = w.skipPast(",:")
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		return w.fail("invalid JSON: %v", err)
	}
	return nil
}

// str reads a string value.
func (w *jsonWalker) str(what string) (string, error) {
	tok, err := w.next()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", w.fail("%s is %s, want a string", what, describe(tok))
	}
	return s, nil
}

// uints reads an array of non-negative integers that fit in int64; of
// length n unless n < 0.
func (w *jsonWalker) uints(what string, n int) ([]int64, error) {
	tok, err := w.next()
	if err != nil {
		return nil, err
	}
	start := w.at
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, w.fail("%s is %s, want an array of integers", what, describe(tok))
	}
	out := []int64{}
	for w.dec.More() {
		tok, err := w.next()
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, w.fail("%s holds %s, want non-negative integers", what, describe(tok))
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || v < 0 {
			return nil, w.fail("%s holds %s, want a non-negative integer below 2^63", what, num)
		}
		out = append(out, v)
	}
	if _, err = w.next(); err != nil { // ']'
		return nil, err
	}
	if n >= 0 && len(out) != n {
		return nil, &headerError{offset: start, msg: fmt.Sprintf("%s has %d values, want %d", what, len(out), n)}
	}
	return out, nil
}

// end checks that nothing but whitespace follows the document.
func (w *jsonWalker) end() error {
	w.at = w.skipPast("")
	if _, err := w.dec.Token(); err != io.EOF {
		return w.fail("data after the header's JSON object")
	}
	return nil
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		if v == '[' {
			return "an array"
		}
		return fmt.Sprintf("%q", string(v))
	case string:
		return "a string"
	case json.Number:
		return "the number " + string(v)
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// parseHeader reads the header object: tensor entries in header order and
// the optional __metadata__ (nil when absent or null). Errors are
// *headerError.
func parseHeader(h []byte) ([]entry, map[string]string, error) {
	w := newJSONWalker(h)
	var entries []entry
	var meta map[string]string
	err := w.object("the header", func(name string, off int64) error {
		if name == "__metadata__" {
			m, err := parseMetadata(w)
			meta = m
			return err
		}
		e, err := parseEntry(w, off)
		if he, ok := err.(*headerError); ok {
			he.msg = fmt.Sprintf("tensor %q: %s", name, he.msg)
		}
		e.name, e.offset = name, off
		entries = append(entries, e)
		return err
	})
	if err == nil {
		err = w.end()
	}
	if err != nil {
		return nil, nil, err
	}
	return entries, meta, nil
}

// parseMetadata reads __metadata__: null or an object of strings.
func parseMetadata(w *jsonWalker) (map[string]string, error) {
	if w.peekNull() {
		_, err := w.next()
		return nil, err
	}
	m := map[string]string{}
	err := w.object("__metadata__", func(key string, _ int64) error {
		v, err := w.str("value")
		if he, ok := err.(*headerError); ok {
			he.msg = fmt.Sprintf("__metadata__[%q]: %s", key, he.msg)
		}
		m[key] = v
		return err
	})
	return m, err
}

// peekNull reports whether the value after the key just read is null.
func (w *jsonWalker) peekNull() bool {
	return bytes.HasPrefix(w.src[w.skipPast(":"):], []byte("null"))
}

// parseEntry reads {"dtype", "shape", "data_offsets"} (other fields are
// ignored, as the reference implementation does; each field at most once,
// names matched exactly).
// Messages leave out the tensor's name; parseHeader puts it in front.
func parseEntry(w *jsonWalker, keyOffset int64) (entry, error) {
	var e entry
	var haveDType, haveShape, haveOffsets bool
	err := w.object("entry", func(key string, _ int64) error {
		var err error
		switch key {
		case "dtype":
			haveDType = true
			e.dtype, err = w.str("dtype")
		case "shape":
			haveShape = true
			e.shape, err = w.uints("shape", -1)
		case "data_offsets":
			haveOffsets = true
			var offs []int64
			offs, err = w.uints("data_offsets [begin, end]", 2)
			if err == nil {
				e.begin, e.end = offs[0], offs[1]
			}
		default:
			err = w.skip()
		}
		return err
	})
	if err != nil {
		return e, err
	}
	if !haveDType || !haveShape || !haveOffsets {
		return e, &headerError{offset: keyOffset, msg: "lacks dtype, shape or data_offsets"}
	}
	return e, nil
}
