// Package stats is `strata stats`: it reads a running node's /metrics
// (Prometheus text format) and renders what an operator watches, as
// varnishstat does: request and origin rates, hit ratio by tier, fills,
// memory and disk usage, the disk write rate against its budget, drops by
// reason and errors. Rates are differences between two snapshots over the
// time between them; nothing here keeps state beyond the last snapshot.
package stats

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Sample is one series of a snapshot: its labels as exposed, without the
// braces (`cache_status="hit"`), and its value.
type Sample struct {
	Labels string
	Value  float64
}

// Snapshot is one scrape: samples by metric name (histogram samples
// under their _bucket, _sum and _count names).
type Snapshot map[string][]Sample

// maxLine bounds one exposition line; longer lines are an error.
const maxLine = 64 << 10

// Parse reads the Prometheus text exposition format. Comments and blank
// lines are skipped; a sample's optional timestamp is ignored. It fails
// on a line it cannot read, with the line number.
func Parse(r io.Reader) (Snapshot, error) {
	s := Snapshot{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("stats: line %d: %w", n, err)
		}
		s[name] = append(s[name], Sample{Labels: labels, Value: value})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	return s, nil
}

var errSyntax = errors.New("not a sample line")

// parseLine splits `name{labels} value [timestamp]`.
func parseLine(line string) (name, labels string, value float64, err error) {
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", "", 0, errSyntax
	}
	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		end := closingBrace(rest)
		if end < 0 {
			return "", "", 0, errSyntax
		}
		labels, rest = rest[1:end], rest[end+1:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || len(fields) > 2 {
		return "", "", 0, errSyntax
	}
	value, err = strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", "", 0, fmt.Errorf("%w: value %q", errSyntax, fields[0])
	}
	return name, labels, value, nil
}

// closingBrace is the index of the '}' closing s[0]'s '{', skipping
// quoted label values (with their backslash escapes); -1 if none.
func closingBrace(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && c == '}':
			return i
		}
	}
	return -1
}

// Sum is the sum of name's samples whose labels contain every pair
// (`reason="queue"`); with no pairs, of all its samples.
func (s Snapshot) Sum(name string, pairs ...string) float64 {
	var v float64
next:
	for _, x := range s[name] {
		for _, p := range pairs {
			if !hasPair(x.Labels, p) {
				continue next
			}
		}
		v += x.Value
	}
	return v
}

// Has says whether the snapshot has any sample of name.
func (s Snapshot) Has(name string) bool { return len(s[name]) > 0 }

func hasPair(labels, pair string) bool {
	for labels != "" {
		if strings.HasPrefix(labels, pair) && (len(labels) == len(pair) || labels[len(pair)] == ',') {
			return true
		}
		end := closingQuote(labels)
		if end < 0 {
			return false
		}
		labels = strings.TrimPrefix(labels[end:], ",")
	}
	return false
}

// closingQuote is the index just past the quoted value of labels' first
// pair; -1 if it has none.
func closingQuote(labels string) int {
	i := strings.IndexByte(labels, '"')
	if i < 0 {
		return -1
	}
	for j := i + 1; j < len(labels); j++ {
		switch labels[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}
