package chat

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Python semantics the templates rely on: json.dumps (transformers' tojson),
// str() and repr() of values, and str.strip()'s idea of whitespace.

// unwrap returns the Go value inside gonja's wrappers (*exec.Value,
// reflect.Value), with a nil interface for None.
func unwrap(v any) any {
	for {
		switch t := v.(type) {
		case *exec.Value:
			if t == nil || t.IsNil() {
				return nil
			}
			v = t.Interface()
		case reflect.Value:
			if !t.IsValid() || !t.CanInterface() {
				return nil
			}
			v = t.Interface()
		case exec.Dict:
			return &t
		default:
			return v
		}
	}
}

// jsonOptions are json.dumps' arguments that transformers' tojson exposes.
type jsonOptions struct {
	indent      string // "" with hasIndent: newlines without indentation
	hasIndent   bool
	itemSep     string
	keySep      string
	sortKeys    bool
	ensureASCII bool
}

func defaultJSONOptions() jsonOptions {
	return jsonOptions{itemSep: ", ", keySep: ": "}
}

// pyJSON is json.dumps(v, ...) for template values.
func pyJSON(v any, o jsonOptions) (string, error) {
	var b strings.Builder
	if err := writeJSON(&b, v, o, 0); err != nil {
		return "", err
	}
	return b.String(), nil
}

func writeJSON(b *strings.Builder, v any, o jsonOptions, depth int) error {
	if depth > maxJSONDepth {
		return errJSONDepth
	}
	v = unwrap(v)
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
		return nil
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
		return nil
	case string:
		writeJSONString(b, t, o.ensureASCII)
		return nil
	case *exec.Dict:
		pairs := t.Pairs
		if o.sortKeys {
			pairs = append([]*exec.Pair(nil), pairs...)
			sort.SliceStable(pairs, func(i, j int) bool { return pyStr(pairs[i].Key) < pyStr(pairs[j].Key) })
		}
		if len(pairs) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			writeNewline(b, o, depth+1)
			key, err := jsonKey(p.Key)
			if err != nil {
				return err
			}
			writeJSONString(b, key, o.ensureASCII)
			b.WriteString(o.keySep)
			if err := writeJSON(b, p.Value, o, depth+1); err != nil {
				return err
			}
		}
		writeNewline(b, o, depth)
		b.WriteByte('}')
		return nil
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(r.Int(), 10))
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(r.Uint(), 10))
		return nil
	case reflect.Float32, reflect.Float64:
		b.WriteString(pyFloatJSON(r.Float()))
		return nil
	case reflect.String:
		writeJSONString(b, r.String(), o.ensureASCII)
		return nil
	case reflect.Bool:
		return writeJSON(b, r.Bool(), o, depth)
	case reflect.Slice, reflect.Array:
		if r.Len() == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i := 0; i < r.Len(); i++ {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			writeNewline(b, o, depth+1)
			if err := writeJSON(b, r.Index(i), o, depth+1); err != nil {
				return err
			}
		}
		writeNewline(b, o, depth)
		b.WriteByte(']')
		return nil
	case reflect.Map:
		// A Go map (gonja's namespace() or a builtin filter's result): sorted
		// keys, as gonja iterates them.
		keys := r.MapKeys()
		d := newDict()
		sorted := make([]string, 0, len(keys))
		byName := map[string]reflect.Value{}
		for _, k := range keys {
			name := fmt.Sprint(k.Interface())
			sorted = append(sorted, name)
			byName[name] = r.MapIndex(k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			d.set(k, byName[k].Interface())
		}
		return writeJSON(b, d.d, o, depth)
	case reflect.Pointer:
		if r.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writeJSON(b, r.Elem(), o, depth)
	}
	return fmt.Errorf("Object of type %T is not JSON serializable", v)
}

func writeNewline(b *strings.Builder, o jsonOptions, depth int) {
	if !o.hasIndent {
		return
	}
	b.WriteByte('\n')
	for range depth {
		b.WriteString(o.indent)
	}
}

// jsonKey is the key json.dumps writes for a dict key.
func jsonKey(k *exec.Value) (string, error) {
	switch t := unwrap(k).(type) {
	case string:
		return t, nil
	case nil:
		return "null", nil
	case bool:
		if t {
			return "true", nil
		}
		return "false", nil
	case float64:
		return pyFloatJSON(t), nil
	case int:
		return strconv.Itoa(t), nil
	}
	return "", fmt.Errorf("keys must be str, int, float, bool or None, not %T", unwrap(k))
}

const hexDigits = "0123456789abcdef"

// writeJSONString is json.dumps of a str: ", \ and control characters
// escaped; with ensureASCII every non-ASCII character as \uXXXX (surrogate
// pairs beyond the BMP). Invalid UTF-8 bytes are copied as they are (a Python
// str cannot hold them; with ensureASCII they become \ufffd).
func writeJSONString(b *strings.Builder, s string, ensureASCII bool) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			default:
				if c < 0x20 || (ensureASCII && c == 0x7f) {
					writeU(b, rune(c))
				} else {
					b.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !ensureASCII {
			b.WriteString(s[i : i+size])
		} else if r >= 0x10000 {
			r -= 0x10000
			writeU(b, 0xd800+(r>>10))
			writeU(b, 0xdc00+(r&0x3ff))
		} else {
			writeU(b, r)
		}
		i += size
	}
	b.WriteByte('"')
}

func writeU(b *strings.Builder, r rune) {
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>shift)&0xf])
	}
}

// pyFloatRepr is Python's repr(float): the shortest digits that round-trip,
// in positional notation when the decimal exponent is in [-4, 16), else
// d.ddde±XX; always with a '.' or an exponent.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expStr, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	if exp >= -4 && exp < 16 {
		if exp >= 0 {
			if len(digits) <= exp+1 {
				out = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
			} else {
				out = digits[:exp+1] + "." + digits[exp+1:]
			}
		} else {
			out = "0." + strings.Repeat("0", -exp-1) + digits
		}
	} else {
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign = "-"
			exp = -exp
		}
		out += "e" + sign + fmt.Sprintf("%02d", exp)
	}
	if neg {
		out = "-" + out
	}
	return out
}

// pyFloatJSON is json.dumps of a float (NaN and infinities as JavaScript
// names, as Python's allow_nan=True does).
func pyFloatJSON(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyFloatRepr(f)
}

// pyStr is Python's str(v) for template values.
func pyStr(v any) string {
	switch t := unwrap(v).(type) {
	case string:
		return t
	default:
		return pyRepr(t)
	}
}

// pyRepr is Python's repr(v) for template values.
func pyRepr(v any) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

func writeRepr(b *strings.Builder, v any, depth int) {
	if depth > maxJSONDepth {
		b.WriteString("...")
		return
	}
	v = unwrap(v)
	switch t := v.(type) {
	case nil:
		b.WriteString("None")
		return
	case bool:
		if t {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
		return
	case string:
		writeStrRepr(b, t)
		return
	case *exec.Dict:
		b.WriteByte('{')
		for i, p := range t.Pairs {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, p.Key, depth+1)
			b.WriteString(": ")
			writeRepr(b, p.Value, depth+1)
		}
		b.WriteByte('}')
		return
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(r.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(r.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		b.WriteString(pyFloatRepr(r.Float()))
	case reflect.String:
		writeStrRepr(b, r.String())
	case reflect.Slice, reflect.Array:
		b.WriteByte('[')
		for i := 0; i < r.Len(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, r.Index(i), depth+1)
		}
		b.WriteByte(']')
	default:
		b.WriteString(fmt.Sprint(v))
	}
}

// writeStrRepr is repr(str): single quotes unless the text holds ' and no ",
// backslash escapes for \\, the quote, \n \r \t and the characters that are
// not printable (\xhh, \uhhhh, \Uhhhhhhhh). Go's unicode.IsPrint stands in for
// str.isprintable (they differ only on characters unassigned in one of the
// two Unicode versions). Invalid UTF-8 bytes are copied.
func writeStrRepr(b *strings.Builder, s string) {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b.WriteByte(quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteByte(byte(r))
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError && size == 1, r == ' ', unicode.IsPrint(r):
			b.WriteString(s[i : i+size])
		case r < 0x100:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[r>>4])
			b.WriteByte(hexDigits[r&0xf])
		case r < 0x10000:
			writeU(b, r)
		default:
			fmt.Fprintf(b, `\U%08x`, r)
		}
		i += size
	}
	b.WriteByte(quote)
}

// isPySpace reports whether Python's str.isspace() holds for r: Unicode
// White_Space plus the information separators U+001C..U+001F, which Go's
// unicode.IsSpace leaves out.
func isPySpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0x1c, 0x1d, 0x1e, 0x1f, 0x85, 0xa0, 0x1680,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

// pyStrip is Python's str.strip/lstrip/rstrip: without chars, whitespace;
// with chars, any of its characters.
func pyStrip(s string, chars *string, left, right bool) string {
	cut := isPySpace
	if chars != nil {
		set := *chars
		cut = func(r rune) bool { return strings.ContainsRune(set, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s
}
