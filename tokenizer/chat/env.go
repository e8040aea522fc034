package chat

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/builtins/methods"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// The gonja environment every template renders in: gonja's builtins with the
// pieces transformers' Jinja environment has and gonja lacks or does
// differently (Python string methods, ordered dict methods, json.dumps
// tojson, strict `is true` / `is false`, a bounded range()).
// raise_exception and strftime_now are set per rendering (template.go).

// maxRange bounds range(), as Jinja's sandbox does (MAX_RANGE).
const maxRange = 100000

var environment = newEnvironment()

func newEnvironment() *exec.Environment {
	filters := exec.NewFilterSet(map[string]exec.FilterFunction{})
	filters.Update(builtins.Filters)
	for name, f := range map[string]exec.FilterFunction{
		"tojson":     filterToJSON,
		"trim":       filterTrim,
		"items":      filterItems,
		"string":     filterString,
		"upper":      strFilter(pyUpper),
		"lower":      strFilter(pyLower),
		"capitalize": strFilter(pyCapitalize),
		"title":      strFilter(jinjaTitle),
		"replace":    filterReplace,
		"dictsort":   filterDictSort,
		"list":       filterList,
	} {
		mustOK(replaceOrRegister(filters, name, f))
	}

	tests := exec.NewTestSet(map[string]exec.TestFunction{})
	tests.Update(builtins.Tests)
	mustOK(tests.Replace("true", func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
		return in.IsBool() && in.Bool(), nil
	}))
	mustOK(tests.Replace("false", func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
		return in.IsBool() && !in.Bool(), nil
	}))
	mustOK(tests.Replace("sequence", func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
		return in.IsList() || in.IsString() || in.IsDict(), nil
	}))

	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	ctx.Set("range", rangeFunction)
	ctx.Set("dict", dictFunction)

	return &exec.Environment{
		Context:           ctx,
		Filters:           filters,
		Tests:             tests,
		ControlStructures: chatControlStructures(),
		Methods: exec.Methods{
			Bool:  methods.All.Bool,
			Int:   methods.All.Int,
			Float: methods.All.Float,
			Str:   strMethods(),
			Dict:  dictMethods(),
			List:  methods.All.List,
		},
	}
}

func mustOK(err error) {
	if err != nil {
		panic("chat: building the template environment: " + err.Error())
	}
}

func replaceOrRegister(fs *exec.FilterSet, name string, f exec.FilterFunction) error {
	if fs.Exists(name) {
		return fs.Replace(name, f)
	}
	return fs.Register(name, f)
}

// ---------------------------------------------------------------- filters

func errValue(format string, args ...any) *exec.Value {
	return exec.AsValue(fmt.Errorf(format, args...))
}

// filterToJSON is transformers' tojson: json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False).
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	o := defaultJSONOptions()
	names := []string{"ensure_ascii", "indent", "separators", "sort_keys"}
	if len(params.Args) > len(names) {
		return errValue("tojson: too many arguments")
	}
	args := map[string]*exec.Value{}
	for i, a := range params.Args {
		args[names[i]] = a
	}
	for k, v := range params.KwArgs {
		if _, dup := args[k]; dup {
			return errValue("tojson: argument %q given twice", k)
		}
		args[k] = v
	}
	separators := false
	for k, v := range args {
		switch k {
		case "ensure_ascii":
			o.ensureASCII = v.IsTrue()
		case "sort_keys":
			o.sortKeys = v.IsTrue()
		case "indent":
			switch {
			case v.IsNil():
			case v.IsInteger():
				o.hasIndent, o.indent = true, strings.Repeat(" ", max(0, min(v.Integer(), 64)))
			case v.IsString():
				o.hasIndent, o.indent = true, v.String()
			default:
				return errValue("tojson: indent must be an int or a string")
			}
		case "separators":
			if v.IsNil() {
				continue
			}
			if !v.IsList() || v.Len() != 2 {
				return errValue("tojson: separators must be a pair of strings")
			}
			o.itemSep, o.keySep = pyStr(v.Index(0)), pyStr(v.Index(1))
			separators = true
		default:
			return errValue("tojson: unexpected argument %q", k)
		}
	}
	if o.hasIndent && !separators {
		o.itemSep = "," // json.dumps' default when indent is set
	}
	s, err := pyJSON(in, o)
	if err != nil {
		return errValue("tojson: %v", err)
	}
	return exec.AsSafeValue(s)
}

// filterTrim is Jinja's trim(chars=None): str.strip(chars).
func filterTrim(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	var chars *string
	c := params.First()
	if v, ok := params.KwArgs["chars"]; ok {
		c = v
	}
	if !c.IsNil() {
		s := pyStr(c)
		chars = &s
	}
	return exec.AsValue(pyStrip(pyStr(in), chars, true, true))
}

// filterItems is Jinja's items: the (key, value) pairs of a dict in order.
func filterItems(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if in.IsNil() {
		return exec.AsValue(pyList{})
	}
	items, ok := dictItems(in)
	if !ok {
		return errValue("items: %s is not a mapping", pyRepr(in))
	}
	return exec.AsValue(items)
}

// dictItems is [[key, value], ...] of a dict value in its order (a Go map,
// from gonja's own builtins, in sorted key order).
func dictItems(in *exec.Value) (pyList, bool) {
	switch d := unwrap(in).(type) {
	case *exec.Dict:
		out := make(pyList, len(d.Pairs))
		for i, p := range d.Pairs {
			out[i] = pyList{p.Key, p.Value}
		}
		return out, true
	}
	if !in.IsDict() {
		return nil, false
	}
	out := pyList{}
	in.Iterate(func(_, _ int, key, value *exec.Value) bool {
		out = append(out, pyList{key, value})
		return true
	}, func() {})
	return out, true
}

// filterList is list(x): the characters of a string, the keys of a dict,
// the items of a list.
func filterList(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	out := pyList{}
	if in.IsString() {
		for _, r := range in.String() {
			out = append(out, string(r))
		}
		return exec.AsValue(out)
	}
	if items, ok := dictItems(in); ok {
		for _, it := range items {
			out = append(out, it.(pyList)[0])
		}
		return exec.AsValue(out)
	}
	if !in.IsIterable() && !in.IsList() {
		return errValue("list: %s is not iterable", pyRepr(in))
	}
	in.Iterate(func(_, _ int, key, _ *exec.Value) bool {
		out = append(out, key.Interface())
		return true
	}, func() {})
	return exec.AsValue(out)
}

// filterString is str(x).
func filterString(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	return exec.AsValue(pyStr(in))
}

func strFilter(f func(string) string) exec.FilterFunction {
	return func(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
		if in.IsError() {
			return in
		}
		return exec.AsValue(f(pyStr(in)))
	}
}

// filterReplace is Jinja's replace(old, new, count=None).
func filterReplace(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if len(params.Args) < 2 {
		return errValue("replace: needs old and new")
	}
	n := -1
	if len(params.Args) > 2 && params.Args[2].IsInteger() {
		n = params.Args[2].Integer()
	} else if c, ok := params.KwArgs["count"]; ok && c.IsInteger() {
		n = c.Integer()
	}
	return exec.AsValue(strings.Replace(pyStr(in), pyStr(params.Args[0]), pyStr(params.Args[1]), n))
}

// filterDictSort is Jinja's dictsort(case_sensitive=False, by='key',
// reverse=False).
func filterDictSort(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	items, ok := dictItems(in)
	if !ok {
		return errValue("dictsort: %s is not a mapping", pyRepr(in))
	}
	caseSensitive := params.GetKeywordArgument("case_sensitive", false).IsTrue()
	byValue := params.GetKeywordArgument("by", "key").String() == "value"
	reverse := params.GetKeywordArgument("reverse", false).IsTrue()
	key := func(i int) string {
		pair := items[i].(pyList)
		s := pyStr(pair[0])
		if byValue {
			s = pyStr(pair[1])
		}
		if !caseSensitive {
			s = strings.ToLower(s)
		}
		return s
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if reverse {
			return key(idx[a]) > key(idx[b])
		}
		return key(idx[a]) < key(idx[b])
	})
	out := make(pyList, len(items))
	for i, j := range idx {
		out[i] = items[j]
	}
	return exec.AsValue(out)
}

// ---------------------------------------------------------------- globals

// rangeFunction is range([start, ]stop[, step]) as a list of at most
// maxRange items.
func rangeFunction(_ *exec.Evaluator, params *exec.VarArgs) (pyList, error) {
	var a [3]int
	for i, v := range params.Args {
		if i >= 3 || !v.IsInteger() {
			return nil, errors.New("range: expected [start, ]stop[, step] integers")
		}
		a[i] = v.Integer()
	}
	start, stop, step := 0, 0, 1
	switch len(params.Args) {
	case 1:
		stop = a[0]
	case 2:
		start, stop = a[0], a[1]
	case 3:
		start, stop, step = a[0], a[1], a[2]
	default:
		return nil, errors.New("range: expected [start, ]stop[, step] integers")
	}
	if step == 0 {
		return nil, errors.New("range: step must not be zero")
	}
	out := pyList{}
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		if len(out) >= maxRange {
			return nil, fmt.Errorf("range: more than %d items", maxRange)
		}
		out = append(out, i)
	}
	return out, nil
}

// dictFunction is dict(**kwargs). gonja hands keyword arguments over as a Go
// map, so their order is lost: the keys are sorted.
func dictFunction(_ *exec.Evaluator, params *exec.VarArgs) *exec.Value {
	d := newDict()
	for _, a := range params.Args {
		items, ok := dictItems(a)
		if !ok {
			return errValue("dict: argument is not a mapping")
		}
		for _, it := range items {
			pair := it.(pyList)
			d.set(pyStr(pair[0]), pair[1])
		}
	}
	keys := make([]string, 0, len(params.KwArgs))
	for k := range params.KwArgs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.set(k, params.KwArgs[k])
	}
	return exec.AsValue(d.d)
}

// ---------------------------------------------------------------- methods
