package httpcache

// A Structured Fields Dictionary reader (RFC 8941 §3.2, parsed as §4.2.2
// says), just enough for the targeted cache-control fields of RFC 9213:
// each member is handed to a callback with its key and its value's kind
// and bytes; parameters and inner-list members are checked and skipped.
// It never allocates and keeps no reference to its input past the call.
//
// Strictness is the RFC's: any syntax error fails the whole field, which
// the caller then ignores (RFC 9213 §2.2). RFC 8941's types only: the Date
// and Display String types RFC 9651 added are syntax errors here, which
// errs towards ignoring a field strata cannot fully read.

// sfKind is the type of a member's value.
type sfKind uint8

const (
	sfBoolean sfKind = iota + 1
	sfInteger
	sfDecimal
	sfString
	sfToken
	sfBytes
	sfInnerList
)

// sfMember is one dictionary member. val borrows the input: the integer's
// or decimal's text (sign included), a string's contents with escapes
// still in place, a token, a byte sequence's base64, or "?0"/"?1" for a
// boolean ("?1" for a bare key, which means true). An inner list has no
// val.
type sfMember struct {
	key  []byte
	kind sfKind
	val  []byte
}

// sfTrue is the value of a member given by its key alone.
var sfTrue = []byte("?1")

// sfParser walks one field value.
type sfParser struct {
	b []byte
	i int
}

func (p *sfParser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *sfParser) done() bool { return p.i >= len(p.b) }

func (p *sfParser) skipSP() {
	for p.i < len(p.b) && p.b[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t') {
		p.i++
	}
}

// sfDictionary parses v as a Dictionary, calling f for each member in
// order (a repeated key is reported again: the last one wins, §4.2.2).
// It reports false on any syntax error; f may have been called for the
// members before the error, so callers collect into scratch and commit
// only on success.
func sfDictionary(v []byte, f func(m sfMember)) bool {
	p := sfParser{b: v}
	p.skipSP()
	for !p.done() {
		m, ok := p.member()
		if !ok {
			return false
		}
		f(m)
		p.skipOWS()
		if p.done() {
			return true
		}
		if p.b[p.i] != ',' {
			return false
		}
		p.i++
		p.skipOWS()
		if p.done() {
			return false // trailing comma
		}
	}
	return true
}

// member parses key [ "=" ( bare-item | inner-list ) ] parameters.
func (p *sfParser) member() (sfMember, bool) {
	var m sfMember
	var ok bool
	if m.key, ok = p.key(); !ok {
		return m, false
	}
	if p.peek() != '=' {
		m.kind, m.val = sfBoolean, sfTrue
		return m, p.params()
	}
	p.i++
	if p.peek() == '(' {
		m.kind = sfInnerList
		return m, p.innerList()
	}
	if m.kind, m.val, ok = p.bareItem(); !ok {
		return m, false
	}
	return m, p.params()
}

// key parses ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
func (p *sfParser) key() ([]byte, bool) {
	s := p.i
	if c := p.peek(); !(c >= 'a' && c <= 'z') && c != '*' {
		return nil, false
	}
	p.i++
	for p.i < len(p.b) && sfKeyChar(p.b[p.i]) {
		p.i++
	}
	return p.b[s:p.i], true
}

func sfKeyChar(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' || c == '*'
}

// params parses *( ";" *SP key [ "=" bare-item ] ) and drops them.
func (p *sfParser) params() bool {
	for p.peek() == ';' {
		p.i++
		p.skipSP()
		if _, ok := p.key(); !ok {
			return false
		}
		if p.peek() == '=' {
			p.i++
			if _, _, ok := p.bareItem(); !ok {
				return false
			}
		}
	}
	return true
}

// innerList parses "(" *SP [ item *( 1*SP item ) *SP ] ")" parameters.
func (p *sfParser) innerList() bool {
	p.i++ // '('
	for {
		p.skipSP()
		if p.done() {
			return false
		}
		if p.b[p.i] == ')' {
			p.i++
			return p.params()
		}
		if _, _, ok := p.bareItem(); !ok || !p.params() {
			return false
		}
		if c := p.peek(); c != ' ' && c != ')' {
			return false
		}
	}
}

// bareItem parses one bare item and returns its kind and text.
func (p *sfParser) bareItem() (sfKind, []byte, bool) {
	c := p.peek()
	switch {
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == '"':
		return p.str()
	case c == ':':
		return p.bytes()
	case c == '?':
		return p.boolean()
	case (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '*':
		return p.token()
	}
	return 0, nil, false
}

// number parses an Integer (at most 15 digits) or a Decimal (at most 12
// integer digits, 1 to 3 fractional ones), §4.2.4.
func (p *sfParser) number() (sfKind, []byte, bool) {
	s := p.i
	if p.peek() == '-' {
		p.i++
	}
	if c := p.peek(); c < '0' || c > '9' {
		return 0, nil, false
	}
	digits, dot := 0, -1
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '.' && dot < 0 {
			if digits > 12 {
				return 0, nil, false
			}
			dot = digits
		} else if c < '0' || c > '9' {
			break
		} else {
			digits++
		}
		p.i++
		if digits > 15 {
			return 0, nil, false
		}
	}
	if digits == 0 {
		return 0, nil, false
	}
	if dot < 0 {
		return sfInteger, p.b[s:p.i], true
	}
	frac := digits - dot
	if frac < 1 || frac > 3 {
		return 0, nil, false
	}
	return sfDecimal, p.b[s:p.i], true
}

// str parses a String: DQUOTE *( unescaped / "\" ( DQUOTE / "\" ) ) DQUOTE,
// visible ASCII and space only.
func (p *sfParser) str() (sfKind, []byte, bool) {
	p.i++
	s := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '\\':
			p.i++
			if p.i >= len(p.b) || (p.b[p.i] != '"' && p.b[p.i] != '\\') {
				return 0, nil, false
			}
		case c == '"':
			v := p.b[s:p.i]
			p.i++
			return sfString, v, true
		case c < 0x20 || c > 0x7e:
			return 0, nil, false
		}
		p.i++
	}
	return 0, nil, false // unterminated
}

// token parses ( ALPHA / "*" ) *( tchar / ":" / "/" ).
func (p *sfParser) token() (sfKind, []byte, bool) {
	s := p.i
	p.i++
	for p.i < len(p.b) && (isTchar(p.b[p.i]) || p.b[p.i] == ':' || p.b[p.i] == '/') {
		p.i++
	}
	return sfToken, p.b[s:p.i], true
}

// bytes parses ":" *base64 ":".
func (p *sfParser) bytes() (sfKind, []byte, bool) {
	p.i++
	s := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == ':' {
			v := p.b[s:p.i]
			p.i++
			return sfBytes, v, true
		}
		if !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=') {
			return 0, nil, false
		}
		p.i++
	}
	return 0, nil, false
}

// boolean parses "?0" or "?1".
func (p *sfParser) boolean() (sfKind, []byte, bool) {
	if p.i+1 >= len(p.b) || (p.b[p.i+1] != '0' && p.b[p.i+1] != '1') {
		return 0, nil, false
	}
	v := p.b[p.i : p.i+2]
	p.i += 2
	return sfBoolean, v, true
}
