package hub

import (
	"fmt"
	"net/url"
	"strings"
)

// Scheme is the prefix of a Hub model name.
const Scheme = "hf://"

// Ref is a parsed model name,
//
//	hf://OWNER/REPO[@REVISION][:QUANT | /FILE]
//
// REVISION is a branch, tag or commit (default "main"); one holding a
// slash (refs/pr/1) is written escaped, refs%2Fpr%2F1. QUANT picks a
// GGUF file by its quantisation, case-insensitively (Q4_K_M); FILE names
// one file of the repository (a path inside it).
type Ref struct {
	Owner, Repo string
	Revision    string // "" means "main"
	Quant       string // "" unless :QUANT was given
	File        string // "" unless /FILE was given
}

// RepoID is OWNER/REPO, as the Hub's API names a repository.
func (r Ref) RepoID() string { return r.Owner + "/" + r.Repo }

// Rev is the revision asked for, "main" by default.
func (r Ref) Rev() string {
	if r.Revision == "" {
		return "main"
	}
	return r.Revision
}

// String is the name in its canonical form; Parse(r.String()) is r.
func (r Ref) String() string {
	s := Scheme + r.RepoID()
	if r.Revision != "" {
		s += "@" + escapeRev(r.Revision)
	}
	if r.Quant != "" {
		s += ":" + r.Quant
	}
	if r.File != "" {
		s += "/" + r.File
	}
	return s
}

// IsName reports whether s is meant as a Hub name (it starts with hf://),
// well formed or not; anything else is a local path.
func IsName(s string) bool { return strings.HasPrefix(s, Scheme) }

// NameError is a malformed Hub name: what is wrong, and the byte offset
// in Name where it was found.
type NameError struct {
	Name   string
	Offset int
	Reason string
}

func (e *NameError) Error() string {
	return fmt.Sprintf("hub: bad model name %q at byte %d: %s (want hf://OWNER/REPO[@REVISION][:QUANT|/FILE])", e.Name, e.Offset, e.Reason)
}

// maxName bounds a name's length; its parts have their own bounds
// (owner and repo 96 bytes, revision 255, quantisation 64, file 1024),
// so a canonical name is always shorter.
const maxName = 4096

// Parse reads a Hub model name. A malformed one is a *NameError.
func Parse(name string) (Ref, error) {
	fail := func(off int, reason string) (Ref, error) {
		return Ref{}, &NameError{Name: name, Offset: off, Reason: reason}
	}
	if !IsName(name) {
		return fail(0, "it does not start with "+Scheme)
	}
	if len(name) > maxName {
		return fail(maxName, "too long")
	}
	var r Ref
	pos := len(Scheme)
	rest := name[pos:]
	// OWNER
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return fail(pos+len(rest), "no /REPO after the owner")
	}
	if reason := checkID(rest[:i]); reason != "" {
		return fail(pos, "owner "+reason)
	}
	r.Owner = rest[:i]
	pos += i + 1
	rest = rest[i+1:]
	// REPO ends at @, : or /.
	j := strings.IndexAny(rest, "@:/")
	if j < 0 {
		j = len(rest)
	}
	if reason := checkID(rest[:j]); reason != "" {
		return fail(pos, "repo "+reason)
	}
	r.Repo = rest[:j]
	pos += j
	rest = rest[j:]
	if strings.HasPrefix(rest, "@") {
		k := strings.IndexAny(rest[1:], ":/@")
		if k < 0 {
			k = len(rest) - 1
		}
		raw := rest[1 : 1+k]
		rev, err := url.PathUnescape(raw)
		if err != nil {
			return fail(pos+1, "revision is badly escaped")
		}
		if rev == "" {
			return fail(pos+1, "empty revision")
		}
		if len(rev) > 255 {
			return fail(pos+1, "revision longer than 255 bytes")
		}
		if off := strings.IndexFunc(rev, func(c rune) bool { return c <= ' ' || c == 0x7f || c == '\\' }); off >= 0 {
			return fail(pos+1, "revision holds a space or control character")
		}
		if strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") {
			return fail(pos+1, "revision is not a branch, tag or commit")
		}
		r.Revision = rev
		pos += 1 + k
		rest = rest[1+k:]
	}
	switch {
	case rest == "":
	case rest[0] == ':':
		q := rest[1:]
		if q == "" {
			return fail(pos+1, "empty quantisation")
		}
		for k, c := range q {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
				return fail(pos+1+k, "a quantisation is letters, digits, _, - and . (like Q4_K_M)")
			}
		}
		if len(q) > 64 {
			return fail(pos+1, "quantisation too long")
		}
		r.Quant = q
	case rest[0] == '/':
		f := rest[1:]
		if reason := checkPath(f); reason != "" {
			return fail(pos+1, "file "+reason)
		}
		r.File = f
	default: // only @ after an @ can land here
		return fail(pos, "unexpected "+string(rest[0]))
	}
	return r, nil
}

// checkID checks an owner or repo name as the Hub accepts them: letters,
// digits, -, _ and ., not starting or ending with - or ., no -- or ..,
// at most 96 bytes. It is "" when s is good, else why not.
func checkID(s string) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > 96:
		return "is longer than 96 bytes"
	case strings.Contains(s, "--") || strings.Contains(s, ".."):
		return "holds -- or .."
	case s[0] == '-' || s[0] == '.' || s[len(s)-1] == '-' || s[len(s)-1] == '.':
		return "starts or ends with - or ."
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Sprintf("holds %q (letters, digits, -, _ and . only)", c)
		}
	}
	return ""
}

// checkPath checks a file path inside a repository: slash-separated, no
// empty, . or .. parts, no backslash or control characters. It is ""
// when p is good, else why not.
func checkPath(p string) string {
	if p == "" {
		return "is empty"
	}
	if len(p) > 1024 {
		return "is longer than 1024 bytes"
	}
	if strings.ContainsAny(p, "\\\x00") || strings.IndexFunc(p, func(c rune) bool { return c < ' ' || c == 0x7f }) >= 0 {
		return "holds a backslash or control character"
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return "has an empty, . or .. part"
		}
	}
	return ""
}

// escapeRev escapes what would end or break a revision in a name: %, /,
// :, @ and bytes outside printable ASCII.
func escapeRev(rev string) string {
	var b strings.Builder
	for i := 0; i < len(rev); i++ {
		c := rev[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("%/:@", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}
