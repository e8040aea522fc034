package server

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode"

	"github.com/vkllm/vkllm/tokenizer/chat"
)

// toolCallDelta is one piece of a streamed tool call, OpenAI style: the
// first carries index, id, type and name (arguments ""), the next ones
// only index and a fragment of the arguments.
type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

const (
	hermesOpen  = "<tool_call>"
	hermesClose = "</tool_call>"
)

// hermesHead is the start of a Hermes call up to its arguments.
var hermesHead = regexp.MustCompile(`^\s*\{\s*"name"\s*:\s*"([^"\\]+)"\s*,\s*"arguments"\s*:\s*`)

// callParser splits a reply in the Hermes format (Qwen's and the server's
// own tool prompt) into content and tool calls as its text arrives. A call
// whose text starts {"name": "f", "arguments": {…  is announced as soon
// as its name is known and its arguments follow as they are written
// (compacted, as json.Compact: whitespace outside strings dropped); any
// other call is read whole at its </tool_call> (or at the end) with
// chat.ParseToolCalls' rules. Text that is no call stays content, as in
// chat.ParseToolCalls; whitespace next to a call is dropped.
//
// Arguments already sent cannot be taken back: a streamed call that turns
// out not to be valid JSON keeps what was sent (with tool_choice
// "required" the grammar rules that out).
type callParser struct {
	state int    // pContent, pHead, pArgs, pTail
	buf   string // text not yet given out
	ws    string // whitespace held back in content
	wsOff string // the whitespace dropped before <tool_call>, should it be no call
	trim  bool   // drop the whitespace that starts the content (after a call)
	calls []chat.ToolCall
	newID func() string
	depth int // pArgs: open objects and arrays
	inStr bool
	esc   bool
}

const (
	pContent = iota
	pHead    // after <tool_call>, before the arguments
	pArgs    // streaming the arguments
	pTail    // after the arguments, until </tool_call>
)

func newCallParser() *callParser { return &callParser{newID: func() string { return newID("call_") }} }

// add reads more of the reply and returns the content and call deltas
// it completes.
func (p *callParser) add(text string) (string, []toolCallDelta) {
	p.buf += text
	var content strings.Builder
	var deltas []toolCallDelta
	for {
		switch p.state {
		case pContent:
			i := strings.Index(p.buf, hermesOpen)
			if i < 0 {
				keep := partialSuffix(p.buf, hermesOpen)
				p.text(&content, p.buf[:len(p.buf)-keep])
				p.buf = p.buf[len(p.buf)-keep:]
				return content.String(), deltas
			}
			p.text(&content, p.buf[:i])
			p.ws, p.wsOff = "", p.ws // whitespace before a call
			p.buf = p.buf[i+len(hermesOpen):]
			p.state = pHead
		case pHead:
			// Stream the call when its head is there and its arguments
			// open an object; else read it whole once it is closed.
			m := hermesHead.FindStringSubmatchIndex(p.buf)
			if m == nil || m[1] == len(p.buf) || p.buf[m[1]] != '{' {
				j := strings.Index(p.buf, hermesClose)
				if j < 0 {
					return content.String(), deltas // wait for more
				}
				deltas = append(deltas, p.whole(&content, p.buf[:j], true)...)
				p.buf = p.buf[j+len(hermesClose):]
				p.state = pContent
				continue
			}
			name := p.buf[m[2]:m[3]]
			call := chat.ToolCall{ID: p.newID(), Type: "function", Function: chat.FunctionCall{Name: name}}
			deltas = append(deltas, toolCallDelta{Index: len(p.calls), ID: call.ID, Type: call.Type,
				Function: functionDelta{Name: name}})
			p.calls = append(p.calls, call)
			p.buf = p.buf[m[1]:]
			p.state, p.depth, p.inStr, p.esc = pArgs, 0, false, false
		case pArgs:
			frag, n, done := p.scan(p.buf)
			p.buf = p.buf[n:]
			if frag != "" {
				last := &p.calls[len(p.calls)-1]
				last.Function.Arguments += frag
				deltas = append(deltas, toolCallDelta{Index: len(p.calls) - 1, Function: functionDelta{Arguments: frag}})
			}
			if !done {
				return content.String(), deltas
			}
			p.state = pTail
		case pTail:
			j := strings.Index(p.buf, hermesClose)
			if j < 0 {
				keep := partialSuffix(p.buf, hermesClose)
				p.buf = p.buf[len(p.buf)-keep:]
				return content.String(), deltas
			}
			p.buf = p.buf[j+len(hermesClose):]
			p.state, p.trim = pContent, true
		}
	}
}

// finish ends the reply: what was held back, and a call without its
// </tool_call>. truncated reports a call whose arguments were cut off.
func (p *callParser) finish() (content string, deltas []toolCallDelta, truncated bool) {
	var b strings.Builder
	switch p.state {
	case pContent:
		p.text(&b, p.buf)
	case pHead:
		deltas = p.whole(&b, p.buf, false)
	case pArgs:
		truncated = true
	}
	if len(p.calls) == 0 {
		b.WriteString(p.ws) // no call: the text as it was
	}
	p.buf, p.ws, p.state = "", "", pContent
	return b.String(), deltas, truncated
}

// text gives out content, holding back trailing whitespace until more
// content follows (whitespace before a call is dropped).
func (p *callParser) text(out *strings.Builder, s string) {
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

// whole reads one call's body at once; when it is no call, it is content
// (with its markup, as chat.ParseToolCalls leaves it).
func (p *callParser) whole(content *strings.Builder, body string, closed bool) []toolCallDelta {
	_, calls := chat.ParseToolCalls(hermesOpen+body+hermesClose, chat.FormatQwen)
	if len(calls) != 1 {
		s := hermesOpen + body
		if closed {
			s += hermesClose
		}
		p.ws = p.wsOff
		p.text(content, s)
		return nil
	}
	c := calls[0]
	if c.ID == "" {
		c.ID = p.newID()
	}
	c.Type = "function"
	p.calls = append(p.calls, c)
	p.trim = true
	return []toolCallDelta{{Index: len(p.calls) - 1, ID: c.ID, Type: c.Type,
		Function: functionDelta{Name: c.Function.Name, Arguments: c.Function.Arguments}}}
}

// scan reads JSON arguments from s: the compacted fragment, the bytes
// read, and whether the value closed.
func (p *callParser) scan(s string) (string, int, bool) {
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
			continue
		case c == '"':
			p.inStr = true
		case c == '{' || c == '[':
			p.depth++
		case c == '}' || c == ']':
			p.depth--
		}
		b.WriteByte(c)
		if p.depth == 0 {
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

// validArgs reports whether a call's arguments are a JSON object.
func validArgs(args string) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal([]byte(args), &obj) == nil
}
