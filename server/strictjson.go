package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/vkllm/vkllm/tokenizer/chat"
)

// encoding/json matches object keys to struct fields without regard to
// case and lets a repeated key win over the first, so a body such as
// {"max_tokens":1,"MAX_TOKENS":7} runs 7 tokens past a gateway that checks
// max_tokens. Before a body is decoded, checkKeys walks it once with the
// type it decodes into and refuses, with a 400 naming the key:
//
//   - a key twice in one object (anywhere in the body);
//   - a key that is a field's name only when case is ignored;
//   - an array of more elements than its field allows (maxArrays: the
//     messages of a chat, counted as they are read, so a body of 100,000
//     tiny messages is refused before any is decoded).
//
// Other unknown keys stay allowed (clients send vendors' extensions).

// arrayLimit bounds the elements of a top-level array field.
type arrayLimit struct {
	field string
	max   int
	code  string // the error's code
}

// checkKeys walks data, the body of a request that decodes into a value
// of type t. Malformed JSON is left to json.Unmarshal to report.
func checkKeys(data []byte, t reflect.Type, limits []arrayLimit) *apiError {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	w := &keyWalker{dec: dec, limits: limits}
	w.value(t)
	return w.err
}

type keyWalker struct {
	dec    *json.Decoder
	limits []arrayLimit
	path   []string // of the value being read: "messages", "[3]", "role"
	err    *apiError
	bad    bool // malformed JSON: stop, json.Unmarshal reports it
}

// maxKeyDepth is how deep keys are checked; deeper values (only a JSON
// Schema or template kwargs nest so deep) are skipped.
const maxKeyDepth = 64

func (w *keyWalker) stopped() bool { return w.err != nil || w.bad }

func (w *keyWalker) token() (json.Token, bool) {
	tok, err := w.dec.Token()
	if err != nil {
		w.bad = true
		return nil, false
	}
	return tok, true
}

// at names the value being read, as a param: messages[3].role.
func (w *keyWalker) at() string {
	var b strings.Builder
	for i, p := range w.path {
		if i > 0 && !strings.HasPrefix(p, "[") { // a key may be ""
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func (w *keyWalker) fail(code, format string, args ...any) {
	w.err = badParam(w.at(), format, args...)
	w.err.Code = strp(code)
}

// value walks one JSON value that decodes into t (nil: unknown, only
// duplicate keys are checked beneath).
func (w *keyWalker) value(t reflect.Type) {
	if w.stopped() {
		return
	}
	tok, ok := w.token()
	if !ok {
		return
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		return
	}
	if d != '{' && d != '[' {
		w.bad = true
		return
	}
	if len(w.path) >= maxKeyDepth {
		w.skip()
		return
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if d == '{' {
		w.object(t)
		return
	}
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	limit := arrayLimit{max: -1}
	if len(w.path) == 1 {
		for _, l := range w.limits {
			if l.field == w.path[0] {
				limit = l
			}
		}
	}
	n := 0
	for w.dec.More() && !w.stopped() {
		if n++; limit.max >= 0 && n > limit.max {
			w.fail(limit.code, "%s: more than %d elements; the server takes at most %d", w.at(), limit.max, limit.max)
			return
		}
		w.path = append(w.path, "["+strconv.Itoa(n-1)+"]")
		w.value(elem)
		w.path = w.path[:len(w.path)-1]
	}
	if !w.stopped() {
		w.token() // ']'
	}
}

// skip reads the rest of a value whose '{' or '[' was read.
func (w *keyWalker) skip() {
	for open := 1; open > 0 && !w.stopped(); {
		tok, ok := w.token()
		if !ok {
			return
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			open++
		case json.Delim('}'), json.Delim(']'):
			open--
		}
	}
}

// object walks an object's members, its '{' read.
func (w *keyWalker) object(t reflect.Type) {
	var fields map[string]reflect.Type // nil unless t is a known struct
	var lower map[string]string        // lower-case name → name
	var elem reflect.Type              // a map's values
	if t != nil {
		switch {
		case t.Kind() == reflect.Struct:
			fields, lower = structFields(t)
		case t.Kind() == reflect.Map:
			elem = t.Elem()
		}
	}
	seen := map[string]bool{}
	for w.dec.More() && !w.stopped() {
		tok, ok := w.token()
		if !ok {
			return
		}
		key, _ := tok.(string)
		w.path = append(w.path, key)
		vt := elem
		switch {
		case seen[key]:
			w.fail("duplicate_key", "the key %q is given twice", key)
		case fields != nil:
			ft, known := fields[key]
			if name, ok := lower[strings.ToLower(key)]; !known && ok {
				w.fail("unknown_field", "unknown field %q: field names are matched exactly (did you mean %q?)", key, name)
			}
			vt = ft
		}
		seen[key] = true
		w.value(vt)
		w.path = w.path[:len(w.path)-1]
	}
	if !w.stopped() {
		w.token() // '}'
	}
}

var (
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
	messageType = reflect.TypeFor[chat.Message]()
	fieldCache  sync.Map // reflect.Type → *structInfo
)

type structInfo struct {
	fields map[string]reflect.Type
	lower  map[string]string
}

// structFields are the JSON names of t's fields (those of embedded
// structs too) with their types, nil for a type that decodes itself
// (only duplicates are checked within it), and by lower-case name.
// chat.Message decodes itself, from the fields of its tags and
// "content".
func structFields(t reflect.Type) (map[string]reflect.Type, map[string]string) {
	if v, ok := fieldCache.Load(t); ok {
		si := v.(*structInfo)
		return si.fields, si.lower
	}
	si := &structInfo{fields: map[string]reflect.Type{}, lower: map[string]string{}}
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				add(f.Type)
				continue
			}
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			ft := f.Type
			if reflect.PointerTo(ft).Implements(unmarshaler) && ft != messageType {
				ft = nil
			}
			si.fields[name] = ft
			si.lower[strings.ToLower(name)] = name
		}
	}
	if t.Kind() == reflect.Struct && (t == messageType || !reflect.PointerTo(t).Implements(unmarshaler)) {
		add(t)
	}
	if t == messageType {
		si.fields["content"] = nil
		si.lower["content"] = "content"
	}
	if len(si.fields) == 0 { // a type that decodes itself: keys unknown
		si.fields, si.lower = nil, nil
	}
	fieldCache.Store(t, si)
	return si.fields, si.lower
}

// messagesLimit bounds a request's messages (Config.MaxMessages).
func (s *Server) messagesLimit() arrayLimit {
	return arrayLimit{field: "messages", max: s.cfg.MaxMessages, code: "too_many_messages"}
}
