// Python's str and dict methods for the gonja environment (env.go), as
// transformers' Jinja templates call them.

package chat

import (
	"errors"
	"strings"
	"unicode"

	"github.com/nikolalohinski/gonja/v2/builtins/methods"
	"github.com/nikolalohinski/gonja/v2/exec"
	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// strMethods are gonja's string methods with the ones chat templates use
// replaced by Python-exact versions.
func strMethods() *exec.MethodSet[string] {
	names := []string{"capwords", "casefold", "center", "count", "encode", "expandtabs", "find",
		"format", "format_map", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "islower",
		"isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust", "partition",
		"removeprefix", "removesuffix", "rfind", "rjust", "rpartition", "splitlines", "swapcase", "zfill"}
	m := map[string]exec.Method[string]{}
	for _, n := range names {
		if f, ok := methods.All.Str.Get(n); ok {
			m[n] = f
		}
	}
	strip := func(left, right bool) exec.Method[string] {
		return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
			c, err := optionalArg(args, "chars")
			if err != nil {
				return nil, err
			}
			var chars *string
			if !c.IsNil() {
				if !c.IsString() {
					return nil, errors.New("strip arg must be None or str")
				}
				s := c.String()
				chars = &s
			}
			return pyStrip(self, chars, left, right), nil
		}
	}
	m["strip"] = strip(true, true)
	m["lstrip"] = strip(true, false)
	m["rstrip"] = strip(false, true)
	split := func(right bool) exec.Method[string] {
		return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
			sep, maxsplit := exec.AsValue(nil), -1
			if len(args.Args) > 0 {
				sep = args.Args[0]
			}
			if v, ok := args.KwArgs["sep"]; ok {
				sep = v
			}
			if len(args.Args) > 1 {
				maxsplit = args.Args[1].Integer()
			}
			if v, ok := args.KwArgs["maxsplit"]; ok {
				maxsplit = v.Integer()
			}
			if sep.IsNil() {
				return toAnyList(pySplitSpace(self, maxsplit, right)), nil
			}
			if !sep.IsString() {
				return nil, errors.New("must be str or None")
			}
			if sep.String() == "" {
				return nil, errors.New("empty separator")
			}
			return toAnyList(pySplit(self, sep.String(), maxsplit, right)), nil
		}
	}
	m["split"] = split(false)
	m["rsplit"] = split(true)
	affix := func(prefix bool) exec.Method[string] {
		return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
			if len(args.Args) < 1 {
				return nil, errors.New("startswith/endswith takes at least 1 argument")
			}
			s := []rune(self)
			start, end := 0, len(s)
			if len(args.Args) > 1 && !args.Args[1].IsNil() {
				start = pyIndex(args.Args[1].Integer(), len(s))
			}
			if len(args.Args) > 2 && !args.Args[2].IsNil() {
				end = pyIndex(args.Args[2].Integer(), len(s))
			}
			if start > end {
				return false, nil
			}
			sub := string(s[start:end])
			var cands []string
			a := args.Args[0]
			switch {
			case a.IsString():
				cands = []string{a.String()}
			case a.IsList():
				for i := 0; i < a.Len(); i++ {
					cands = append(cands, pyStr(a.Index(i)))
				}
			default:
				return nil, errors.New("startswith/endswith first arg must be str or a tuple of str")
			}
			for _, c := range cands {
				if (prefix && strings.HasPrefix(sub, c)) || (!prefix && strings.HasSuffix(sub, c)) {
					return true, nil
				}
			}
			return false, nil
		}
	}
	m["startswith"] = affix(true)
	m["endswith"] = affix(false)
	m["replace"] = func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args) < 2 || !args.Args[0].IsString() || !args.Args[1].IsString() {
			return nil, errors.New("replace expects old and new strings")
		}
		n := -1
		if len(args.Args) > 2 {
			n = args.Args[2].Integer()
		} else if c, ok := args.KwArgs["count"]; ok {
			n = c.Integer()
		}
		return strings.Replace(self, args.Args[0].String(), args.Args[1].String(), n), nil
	}
	noArg := func(f func(string) string) exec.Method[string] {
		return func(self string, _ *exec.Value, args *exec.VarArgs) (any, error) {
			if len(args.Args) > 0 || len(args.KwArgs) > 0 {
				return nil, errors.New("method takes no arguments")
			}
			return f(self), nil
		}
	}
	m["upper"] = noArg(pyUpper)
	m["lower"] = noArg(pyLower)
	m["title"] = noArg(pyTitle)
	m["capitalize"] = noArg(pyCapitalize)
	return exec.NewMethodSet(m)
}

func optionalArg(args *exec.VarArgs, name string) (*exec.Value, error) {
	if len(args.Args) > 1 {
		return nil, errors.New("too many arguments")
	}
	v := args.First()
	if k, ok := args.KwArgs[name]; ok {
		v = k
	}
	return v, nil
}

func toAnyList(ss []string) pyList {
	out := make(pyList, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// pyIndex clamps a Python slice index (negative from the end) to [0, n].
func pyIndex(i, n int) int {
	if i < 0 {
		i += n
	}
	return max(0, min(i, n))
}

// pySplitSpace is str.split() / str.rsplit() without a separator: runs of
// whitespace separate, empty strings are dropped.
func pySplitSpace(s string, maxsplit int, right bool) []string {
	out := []string{}
	if right {
		r := []rune(s)
		end := len(r)
		for end > 0 {
			for end > 0 && isPySpace(r[end-1]) {
				end--
			}
			if end == 0 {
				break
			}
			if maxsplit == 0 {
				out = append(out, strings.TrimRightFunc(string(r[:end]), isPySpace))
				break
			}
			start := end
			for start > 0 && !isPySpace(r[start-1]) {
				start--
			}
			out = append(out, string(r[start:end]))
			maxsplit--
			end = start
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
		return out
	}
	rest := strings.TrimLeftFunc(s, isPySpace)
	for rest != "" {
		if maxsplit == 0 {
			out = append(out, rest)
			break
		}
		i := strings.IndexFunc(rest, isPySpace)
		if i < 0 {
			out = append(out, rest)
			break
		}
		out = append(out, rest[:i])
		maxsplit--
		rest = strings.TrimLeftFunc(rest[i:], isPySpace)
	}
	return out
}

// pySplit is str.split(sep, maxsplit) / str.rsplit(sep, maxsplit).
func pySplit(s, sep string, maxsplit int, right bool) []string {
	if !right {
		return strings.SplitN(s, sep, maxsplitN(maxsplit))
	}
	var out []string
	for maxsplit != 0 {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		out = append(out, s[i+len(sep):])
		s = s[:i]
		maxsplit--
	}
	out = append(out, s)
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func maxsplitN(maxsplit int) int {
	if maxsplit < 0 {
		return -1
	}
	return maxsplit + 1
}

// Python's full case mappings ("ß".upper() is "SS"). A cases.Caser is not
// safe for concurrent use, so each call makes its own.
func pyUpper(s string) string { return cases.Upper(language.Und).String(s) }
func pyLower(s string) string { return cases.Lower(language.Und).String(s) }

// isCased is Python's notion of a cased character (upper, lower or title).
func isCased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

// titleRune is the full title-case mapping of one character ("ß" → "Ss").
func titleRune(r rune) string { return cases.Title(language.Und, cases.NoLower).String(string(r)) }

// pyTitle is str.title(): a character after a cased one is lowered, any
// other is title-cased.
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		if prevCased {
			b.WriteString(pyLower(string(r)))
		} else {
			b.WriteString(titleRune(r))
		}
		prevCased = isCased(r)
	}
	return b.String()
}

// pyCapitalize is str.capitalize(): the first character title-cased, the
// rest lowered.
func pyCapitalize(s string) string {
	for i, r := range s {
		return titleRune(r) + pyLower(s[i+len(string(r)):])
	}
	return s
}

// jinjaTitle is Jinja's title filter: each word (split after whitespace,
// '-', brackets and braces) gets its first character upper-cased and the
// rest lowered.
func jinjaTitle(s string) string {
	var b strings.Builder
	atStart := true
	for _, r := range s {
		if atStart {
			b.WriteString(pyUpper(string(r)))
		} else {
			b.WriteString(pyLower(string(r)))
		}
		atStart = unicode.IsSpace(r) || strings.ContainsRune("-([{<", r)
	}
	return b.String()
}

// dictMethods are gonja's dict methods with keys/values/items/get reading
// the ordered dict itself (gonja hands methods a sorted Go map copy).
func dictMethods() *exec.MethodSet[map[string]any] {
	m := map[string]exec.Method[map[string]any]{}
	for _, n := range []string{"pop", "setdefault", "update", "copy", "clear"} {
		if f, ok := methods.All.Dict.Get(n); ok {
			m[n] = f
		}
	}
	m["items"] = func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
		items, _ := dictItems(self)
		return items, nil
	}
	m["keys"] = func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
		items, _ := dictItems(self)
		out := make(pyList, len(items))
		for i, it := range items {
			out[i] = it.(pyList)[0]
		}
		return out, nil
	}
	m["values"] = func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
		items, _ := dictItems(self)
		out := make(pyList, len(items))
		for i, it := range items {
			out[i] = it.(pyList)[1]
		}
		return out, nil
	}
	m["get"] = func(_ map[string]any, self *exec.Value, args *exec.VarArgs) (any, error) {
		if len(args.Args) < 1 || len(args.Args) > 2 {
			return nil, errors.New("get expected 1 or 2 arguments")
		}
		items, _ := dictItems(self)
		for _, it := range items {
			pair := it.(pyList)
			if exec.ToValue(pair[0]).EqualValueTo(args.Args[0]) {
				return unwrap(pair[1]), nil
			}
		}
		if len(args.Args) == 2 {
			return unwrap(args.Args[1]), nil
		}
		return nil, nil
	}
	return exec.NewMethodSet(m)
}
