package chat

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode"
)

// ToolCallDelta is one piece of a streamed tool call, OpenAI style: the
// first piece of a call carries its Index, ID, Type and name (arguments
// ""), the next ones only the Index and a fragment of the arguments.
type ToolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function FunctionDelta `json:"function"`
}

// FunctionDelta is the function part of a ToolCallDelta.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// ToolParser splits a model's reply into content and tool calls as its
// text arrives, in one of the formats of ParseToolCalls:
//
//   - FormatQwen (Hermes): <tool_call> blocks anywhere in the reply.
//   - FormatLlama3: the calls after <|python_tag|>, or the whole reply
//     when it starts with '{'; calls separated by ';' or whitespace, a
//     trailing <|eom_id|> or <|eot_id|> dropped.
//   - FormatMistral: the JSON array after [TOOL_CALLS], a trailing </s>
//     dropped.
//
// A call whose text starts {"name": "f", "arguments": {…  ("parameters"
// for Llama 3) is announced as soon as its name is known, and its
// arguments follow as they are written, compacted as json.Compact
// (whitespace outside strings dropped). Any other call is read whole at
// its end with ParseToolCalls' rules. Text that is no call stays content;
// whitespace next to a call is dropped. How the text is cut into pieces
// changes nothing: the deltas add up to the same content and calls.
//
// Streamed text cannot be taken back: a call announced whose arguments
// turn out not to be valid JSON keeps what was sent, and in the Llama 3
// and Mistral formats text after the calls that is no call is content
// (ParseToolCalls would call the whole reply content). IDs are new ones
// (from the newID given to NewToolParser), never the model's.
//
// A ToolParser is used from one goroutine.
type ToolParser struct {
	format Format
	newID  func() string
	calls  []ToolCall

	state int
	buf   string // text read and not yet given out
	ws    string // whitespace held back in content
	wsOff string // the whitespace dropped before a call's markup, should it be no call
	trim  bool   // drop the whitespace that starts the content (after a call)
	since string // Llama 3 and Mistral: the markup read since the calls began, while none was announced
	begun bool   // Llama 3: some content was seen (a later '{' starts no calls)
	bare  bool   // Llama 3: the calls began with '{', without <|python_tag|>
	after bool   // Mistral: a call was read, a ',' or the ']' comes next

	depth int // JSON scanning: open objects and arrays
	inStr bool
	esc   bool
}

// Parser states.
const (
	tpContent = iota // content, looking for the calls' markup
	tpHead           // a call's head, before its arguments (Hermes: after <tool_call>)
	tpArgs           // streaming the arguments
	tpTail           // after the arguments, to the call's end
	tpCalls          // Llama 3, Mistral: between calls
	tpOpen           // Mistral: after [TOOL_CALLS], before '['
	tpRest           // Llama 3, Mistral: the rest is content
	tpEnd            // Mistral: after ']'
)

const (
	eomID = "<|eom_id|>"
	eotID = "<|eot_id|>"
	eos   = "</s>"
)

// callHead is the start of a call up to its arguments: the name, and
// which key holds the arguments.
var callHead = regexp.MustCompile(`^\s*\{\s*"name"\s*:\s*"([^"\\]+)"\s*,\s*"(arguments|parameters)"\s*:\s*`)

// NewToolParser returns a parser of replies in format f (FormatNone: all
// content). newID names the calls; nil gives "call_" and 24 random hex
// digits.
func NewToolParser(f Format, newID func() string) *ToolParser {
	if newID == nil {
		newID = randomCallID
	}
	return &ToolParser{format: f, newID: newID}
}

func randomCallID() string {
	var b [12]byte
	rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// Calls are the calls read so far, their arguments as far as they came.
func (p *ToolParser) Calls() []ToolCall { return p.calls }

// Add reads more of the reply and returns the content and call deltas it
// completes.
func (p *ToolParser) Add(text string) (content string, deltas []ToolCallDelta) {
	p.buf += text
	var out strings.Builder
	switch p.format {
	case FormatQwen:
		deltas = p.hermes(&out)
	case FormatLlama3, FormatMistral:
		deltas = p.json(&out, false)
	default:
		out.WriteString(p.buf)
		p.buf = ""
	}
	return out.String(), deltas
}

// Finish ends the reply: what was held back, and a call cut short.
// truncated reports a call whose arguments were cut off.
func (p *ToolParser) Finish() (content string, deltas []ToolCallDelta, truncated bool) {
	var out strings.Builder
	switch p.format {
	case FormatQwen:
		switch p.state {
		case tpContent:
			p.text(&out, p.buf)
		case tpHead:
			deltas = p.whole(&out, p.buf, false)
		case tpArgs:
			truncated = true
		}
	case FormatLlama3, FormatMistral:
		deltas = p.json(&out, true)
		truncated = p.state == tpArgs
	default:
		out.WriteString(p.buf)
	}
	if len(p.calls) == 0 {
		out.WriteString(p.ws) // no call: the text as it was
	}
	p.buf, p.ws, p.state = "", "", tpContent
	return out.String(), deltas, truncated
}

const (
	hermesOpen  = qwenOpen
	hermesClose = qwenClose
)

// hermes reads the Hermes format: <tool_call> blocks in content.
func (p *ToolParser) hermes(content *strings.Builder) []ToolCallDelta {
	var deltas []ToolCallDelta
	for {
		switch p.state {
		case tpContent:
			i := strings.Index(p.buf, hermesOpen)
			if i < 0 {
				keep := partialSuffix(p.buf, hermesOpen)
				p.text(content, p.buf[:len(p.buf)-keep])
				p.buf = p.buf[len(p.buf)-keep:]
				return deltas
			}
			p.text(content, p.buf[:i])
			p.ws, p.wsOff = "", p.ws // whitespace before a call
			p.buf = p.buf[i+len(hermesOpen):]
			p.state = tpHead
		case tpHead:
			// Stream the call when its head is there and its arguments
			// open an object; else read it whole once it is closed.
			if d, ok := p.announce(); ok {
				deltas = append(deltas, d)
				continue
			}
			j := strings.Index(p.buf, hermesClose)
			if j < 0 {
				return deltas // wait for more
			}
			deltas = append(deltas, p.whole(content, p.buf[:j], true)...)
			p.buf = p.buf[j+len(hermesClose):]
			p.state = tpContent
		case tpArgs:
			d, done := p.args()
			deltas = append(deltas, d...)
			if !done {
				return deltas
			}
			p.state = tpTail
		case tpTail:
			j := strings.Index(p.buf, hermesClose)
			if j < 0 {
				keep := partialSuffix(p.buf, hermesClose)
				p.buf = p.buf[len(p.buf)-keep:]
				return deltas
			}
			p.buf = p.buf[j+len(hermesClose):]
			p.state, p.trim = tpContent, true
		}
	}
}

// announce starts streaming a call when p.buf begins with its head and
// its arguments open an object: the first delta, and p.buf left at the
// arguments.
func (p *ToolParser) announce() (ToolCallDelta, bool) {
	m := callHead.FindStringSubmatchIndex(p.buf)
	if m == nil || m[1] == len(p.buf) || p.buf[m[1]] != '{' {
		return ToolCallDelta{}, false
	}
	key := p.buf[m[4]:m[5]]
	switch {
	case p.format == FormatLlama3 && key != "parameters", p.format != FormatLlama3 && key != "arguments":
		return ToolCallDelta{}, false // read whole, as ParseToolCalls prefers its key
	}
	name := p.buf[m[2]:m[3]]
	call := ToolCall{ID: p.newID(), Type: "function", Function: FunctionCall{Name: name}}
	p.calls = append(p.calls, call)
	p.buf = p.buf[m[1]:]
	p.since = ""
	p.state, p.depth, p.inStr, p.esc = tpArgs, 0, false, false
	return ToolCallDelta{Index: len(p.calls) - 1, ID: call.ID, Type: call.Type, Function: FunctionDelta{Name: name}}, true
}

// args streams the arguments in p.buf: the deltas, and whether they
// closed.
func (p *ToolParser) args() ([]ToolCallDelta, bool) {
	frag, n, done := p.scan(p.buf, true)
	p.buf = p.buf[n:]
	if frag == "" {
		return nil, done
	}
	last := &p.calls[len(p.calls)-1]
	last.Function.Arguments += frag
	return []ToolCallDelta{{Index: len(p.calls) - 1, Function: FunctionDelta{Arguments: frag}}}, done
}

// text gives out content, holding back trailing whitespace until more
// content follows (whitespace before a call is dropped).
func (p *ToolParser) text(out *strings.Builder, s string) {
	if p.trim {
		if s = strings.TrimLeftFunc(s, unicode.IsSpace); s == "" {
			return
		}
		p.trim = false
	}
	t := strings.TrimRightFunc(s, unicode.IsSpace)
	if t == "" {
		p.ws += s
		return
	}
	out.WriteString(p.ws)
	out.WriteString(t)
	p.ws = s[len(t):]
}

// whole reads one Hermes call's body at once; when it is no call, it is
// content (with its markup, as ParseToolCalls leaves it).
func (p *ToolParser) whole(content *strings.Builder, body string, closed bool) []ToolCallDelta {
	_, calls := parseQwen(hermesOpen + body + hermesClose)
	if len(calls) != 1 {
		s := hermesOpen + body
		if closed {
			s += hermesClose
		}
		p.ws = p.wsOff
		p.text(content, s)
		return nil
	}
	return []ToolCallDelta{p.add(calls[0])}
}

// add records a call read whole and returns its one delta.
func (p *ToolParser) add(c ToolCall) ToolCallDelta {
	c.ID = p.newID()
	c.Type = "function"
	p.calls = append(p.calls, c)
	p.trim = true
	p.since = ""
	return ToolCallDelta{Index: len(p.calls) - 1, ID: c.ID, Type: c.Type,
		Function: FunctionDelta{Name: c.Function.Name, Arguments: c.Function.Arguments}}
}

// scan reads JSON from s, continuing p's depth and string state: the
// text read (compacted when compact), the bytes read, and whether the
// value closed.
func (p *ToolParser) scan(s string, compact bool) (string, int, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case p.inStr:
			b.WriteByte(c)
			switch {
			case p.esc:
				p.esc = false
			case c == '\\':
				p.esc = true
			case c == '"':
				p.inStr = false
			}
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if compact {
				continue
			}
		case c == '"':
			p.inStr = true
		case c == '{' || c == '[':
			p.depth++
		case c == '}' || c == ']':
			p.depth--
		}
		b.WriteByte(c)
		if p.depth == 0 && !p.inStr {
			return b.String(), i + 1, true
		}
	}
	return b.String(), len(s), false
}

// partialSuffix is the length of the longest suffix of s that is a proper
// prefix of tag.
func partialSuffix(s, tag string) int {
	for k := min(len(tag)-1, len(s)); k > 0; k-- {
		if strings.HasSuffix(s, tag[:k]) {
			return k
		}
	}
	return 0
}

// eat consumes n bytes of p.buf that belong to the calls' markup.
func (p *ToolParser) eat(n int) {
	if len(p.calls) == 0 {
		p.since += p.buf[:n]
	}
	p.buf = p.buf[n:]
}

// rest turns what is left into content: with no call yet, the markup read
// since the calls began too (and the whitespace before it); a Llama 3
// reply that began with '{' and no call goes on as content before a
// <|python_tag|>.
func (p *ToolParser) rest() {
	if len(p.calls) == 0 {
		p.ws = p.wsOff
		p.buf = p.since + p.buf
		p.since = ""
		if p.bare {
			// No call at the start: <|python_tag|> may still come.
			p.bare, p.state = false, tpContent
			return
		}
	}
	p.state = tpRest
}

// json reads the Llama 3 and Mistral formats; end is true at the end of
// the reply.
func (p *ToolParser) json(content *strings.Builder, end bool) []ToolCallDelta {
	var deltas []ToolCallDelta
	tag := pythonTag
	if p.format == FormatMistral {
		tag = mistralCall
	}
	for {
		switch p.state {
		case tpContent:
			if p.format == FormatLlama3 && !p.begun {
				// A reply that starts with '{' is calls.
				t := strings.TrimLeftFunc(p.buf, unicode.IsSpace)
				if t == "" {
					if end {
						p.text(content, p.buf)
						p.buf = ""
					}
					return deltas
				}
				p.begun = true
				if t[0] == '{' {
					p.bare = true
					p.wsOff, p.since = "", p.buf[:len(p.buf)-len(t)]
					p.buf = t
					p.state = tpCalls
					continue
				}
			}
			i := strings.Index(p.buf, tag)
			if i < 0 {
				keep := partialSuffix(p.buf, tag)
				if end {
					keep = 0
				}
				p.text(content, p.buf[:len(p.buf)-keep])
				p.buf = p.buf[len(p.buf)-keep:]
				return deltas
			}
			p.text(content, p.buf[:i])
			p.ws, p.wsOff = "", p.ws
			p.since, p.buf = "", p.buf[i:]
			p.eat(len(tag))
			p.state = tpCalls
			if p.format == FormatMistral {
				p.state = tpOpen
			}
		case tpOpen:
			t := strings.TrimLeftFunc(p.buf, unicode.IsSpace)
			switch {
			case t == "" && !end:
				return deltas
			case t != "" && t[0] == '[':
				p.eat(len(p.buf) - len(t) + 1)
				p.state = tpCalls
			default:
				p.rest()
			}
		case tpCalls:
			if !p.between(end) {
				if p.state == tpCalls {
					return deltas // wait for more
				}
				continue
			}
			// At a '{': a call's head, or the whole object.
			if d, ok := p.announce(); ok {
				deltas = append(deltas, d)
				continue
			}
			p.depth, p.inStr, p.esc = 0, false, false
			_, n, closed := p.scan(p.buf, false)
			if !closed {
				if end {
					p.rest()
					continue
				}
				return deltas // wait for more (scanned again next time)
			}
			call, ok := parseCall([]byte(p.buf[:n]), p.format == FormatLlama3)
			if !ok {
				p.rest()
				continue
			}
			p.eat(n)
			deltas = append(deltas, p.add(call))
			p.after = true
		case tpArgs:
			d, done := p.args()
			deltas = append(deltas, d...)
			if !done {
				return deltas
			}
			p.state, p.depth, p.inStr, p.esc = tpTail, 1, false, false
		case tpTail:
			_, n, done := p.scan(p.buf, false)
			p.buf = p.buf[n:]
			if !done {
				return deltas
			}
			p.state, p.after, p.trim = tpCalls, true, true
		case tpEnd:
			t := strings.TrimLeftFunc(p.buf, unicode.IsSpace)
			if t == "" || !end && strings.HasPrefix(eos, t) {
				p.buf = t
				if end {
					p.buf = ""
				}
				return deltas
			}
			if strings.HasPrefix(t, eos) {
				p.buf = t[len(eos):]
				continue
			}
			p.buf, p.state = t, tpRest
		case tpRest:
			p.text(content, p.buf)
			p.buf = ""
			return deltas
		}
	}
}

// between reads what comes between two calls (separators, the end of the
// calls) and reports whether a call's '{' starts p.buf; when not, the
// state has changed or more text must come.
func (p *ToolParser) between(end bool) bool {
	for {
		t := strings.TrimLeftFunc(p.buf, unicode.IsSpace)
		if t == "" {
			if end {
				p.buf = ""
			}
			return false
		}
		p.eat(len(p.buf) - len(t))
		switch {
		case p.format == FormatLlama3 && t[0] == ';' && len(p.calls) > 0:
			p.eat(1)
		case p.format == FormatLlama3 && t[0] == '{', p.format == FormatMistral && t[0] == '{' && !p.after:
			return true
		case p.format == FormatMistral && t[0] == ',' && p.after:
			p.eat(1)
			p.after = false
		case p.format == FormatMistral && t[0] == ']' && p.after:
			p.eat(1)
			p.state = tpEnd
			return false
		case p.format == FormatLlama3 && len(p.calls) > 0 && (strings.HasPrefix(t, eomID) || strings.HasPrefix(t, eotID)):
			p.eat(len(eomID))
		case p.format == FormatLlama3 && len(p.calls) > 0 && !end &&
			(strings.HasPrefix(eomID, t) || strings.HasPrefix(eotID, t)):
			return false // maybe an end marker: wait
		default:
			p.rest()
			return false
		}
	}
}
