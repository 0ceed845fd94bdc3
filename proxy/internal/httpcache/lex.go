package httpcache

// The lexical pieces the rules share (RFC 9110 §5.6): list members,
// optional whitespace (space and tab only), tokens and ASCII case
// folding. None of them allocates.

// nextMember splits off the first comma-separated member of v, trimmed.
func nextMember(v []byte) (member, rest []byte) {
	i := 0
	for i < len(v) && v[i] != ',' {
		i++
	}
	member = trimSpace(v[:i])
	if i < len(v) {
		i++
	}
	return member, v[i:]
}

// firstMember returns the first non-empty member of the list v, or nil.
func firstMember(v []byte) []byte {
	for len(v) > 0 {
		var m []byte
		m, v = nextMember(v)
		if len(m) > 0 {
			return m
		}
	}
	return nil
}

// listHasToken reports whether the comma-separated list v holds the token
// want (lower case), compared case-insensitively.
func listHasToken(v []byte, want string) bool {
	for len(v) > 0 {
		var m []byte
		m, v = nextMember(v)
		if equalLower(m, want) {
			return true
		}
	}
	return false
}

// cut is bytes.Cut for one byte.
func cut(b []byte, c byte) (before, after []byte, found bool) {
	for i, x := range b {
		if x == c {
			return b[:i], b[i+1:], true
		}
	}
	return b, nil, false
}

// trimSpace trims spaces and tabs from both ends of b.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return trimRight(b)
}

// trimRight trims spaces and tabs from the end of b.
func trimRight(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// span is the part [s, e) of a byte slice held elsewhere.
type span struct{ s, e int }

// trimSpan trims spaces and tabs from both ends of v[sp.s:sp.e].
func trimSpan(v []byte, sp span) span {
	for sp.s < sp.e && (v[sp.s] == ' ' || v[sp.s] == '\t') {
		sp.s++
	}
	for sp.e > sp.s && (v[sp.e-1] == ' ' || v[sp.e-1] == '\t') {
		sp.e--
	}
	return sp
}

// isToken reports whether b is a non-empty HTTP token (RFC 9110 §5.6.2:
// tchar only).
func isToken(b []byte) bool {
	for _, c := range b {
		if !isTchar(c) {
			return false
		}
	}
	return len(b) > 0
}

func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// lower lower-cases an ASCII letter.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// compareFold compares a and b ignoring ASCII case.
func compareFold(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if x, y := lower(a[i]), lower(b[i]); x != y {
			return int(x) - int(y)
		}
	}
	return len(a) - len(b)
}

// equalLower reports whether b equals the lower-case ASCII string s,
// ignoring ASCII case in b.
func equalLower(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != s[i] {
			return false
		}
	}
	return true
}

// equalFold compares b and s ignoring ASCII case in both.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}
