package configs

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a config.
type Problem struct {
	File  string // config file name; empty for a Config built in code
	Line  int    // 1-based line of the key concerned; 0 when unknown
	Field string // YAML path such as "cache.disk.region_size" or "origins[1].url"
	Msg   string
}

// String renders "file:line: field: message", leaving out what is unknown.
func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		b.WriteString(":")
	}
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d:", p.Line)
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Problems is every problem of a config, in file order when positions are
// known. As an error it prints one problem per line and matches ErrInvalid.
type Problems []Problem

// Error implements error.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalid) true.
func (ps Problems) Is(target error) bool { return target == ErrInvalid }

// problems collects Problems under field paths.
type problems struct{ list Problems }

func (ps *problems) add(field, format string, args ...any) {
	ps.list = append(ps.list, Problem{Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return ps.list
}
