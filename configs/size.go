package configs

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Size is a byte count. In YAML it is a plain integer (bytes) or a string
// with a unit, parsed by ParseSize: "16KiB", "64MiB", "1.5GiB", "256k".
type Size int64

// Rate is a byte count per second, written as a Size with an optional "/s"
// suffix: "64MiB/s", "100MB", "1048576".
type Rate int64

// Unit multipliers.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// units maps a lower-cased unit suffix to its multiplier. The IEC units
// (KiB) and the one-letter shorthands (k, as nginx and Varnish write them)
// are powers of 1024; the SI units (kB, KB) are powers of 1000.
var units = map[string]int64{
	"": 1, "b": 1,
	"k": KiB, "ki": KiB, "kib": KiB, "kb": 1e3,
	"m": MiB, "mi": MiB, "mib": MiB, "mb": 1e6,
	"g": GiB, "gi": GiB, "gib": GiB, "gb": 1e9,
	"t": TiB, "ti": TiB, "tib": TiB, "tb": 1e12,
}

// maxFracDigits bounds the digits after a decimal point, so that the
// fraction's arithmetic cannot overflow.
const maxFracDigits = 9

// ParseSize parses a byte count: digits, an optional fraction, an optional
// single space, and an optional unit (case-insensitive): none or "B" for
// bytes; "k", "Ki", "KiB" (and m, g, t likewise) for powers of 1024; "kB"
// or "KB" (and MB, GB, TB) for powers of 1000. A fraction needs a unit, and
// the result is rounded down to a whole byte: "1.5GiB" is 1610612736.
// Negative values, signs, exponents and results over MaxInt64 are errors
// wrapping ErrSize.
func ParseSize(s string) (int64, error) {
	num, unit := splitNumber(strings.TrimSpace(s))
	mult, ok := units[strings.ToLower(strings.TrimPrefix(unit, " "))]
	if num == "" || !ok {
		return 0, fmt.Errorf("%w: %q: want a number and a unit such as 64MiB", ErrSize, s)
	}
	whole, frac, hasFrac := strings.Cut(num, ".")
	if whole == "" || (hasFrac && (frac == "" || mult == 1 || len(frac) > maxFracDigits)) {
		return 0, fmt.Errorf("%w: %q: a fraction needs digits on both sides, a unit and at most %d decimals", ErrSize, s, maxFracDigits)
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || (w > 0 && mult > (1<<63-1)/w) {
		return 0, fmt.Errorf("%w: %q overflows", ErrSize, s)
	}
	n := w * mult
	if hasFrac {
		f, err := strconv.ParseUint(frac, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q: bad fraction", ErrSize, s)
		}
		scale := int64(1)
		for range len(frac) {
			scale *= 10
		}
		// floor(mult*f/scale) without overflow: with mult = q*scale + r,
		// q*f < mult and r*f < 10^18.
		add := (mult/scale)*int64(f) + (mult%scale)*int64(f)/scale
		if n > (1<<63-1)-add {
			return 0, fmt.Errorf("%w: %q overflows", ErrSize, s)
		}
		n += add
	}
	return n, nil
}

// splitNumber splits s into its leading digits-and-dots and the rest.
func splitNumber(s string) (num, rest string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	return s[:i], s[i:]
}

// ParseRate parses a byte rate: a ParseSize string with an optional "/s".
func ParseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "/S")
	n, err := ParseSize(t)
	if err != nil {
		return 0, fmt.Errorf("%w: rate %q: want e.g. 64MiB/s", ErrSize, s)
	}
	return n, nil
}

// FormatSize renders n exactly, in the largest IEC unit dividing it:
// 1610612736 is "1536MiB", 1000 is "1000". ParseSize(FormatSize(n)) == n.
func FormatSize(n int64) string {
	for _, u := range []struct {
		m    int64
		name string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if n != 0 && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// String renders the size as FormatSize does.
func (s Size) String() string { return FormatSize(int64(s)) }

// Bytes returns the size as an int64.
func (s Size) Bytes() int64 { return int64(s) }

// UnmarshalYAML accepts an integer or a ParseSize string. A bad value is
// reported as a yaml.TypeError carrying its line, so decoding goes on and
// every problem of a file is listed.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseScalar(n, ParseSize)
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// MarshalYAML writes the size as FormatSize does.
func (s Size) MarshalYAML() (any, error) { return s.String(), nil }

// String renders the rate as "64MiB/s".
func (r Rate) String() string { return FormatSize(int64(r)) + "/s" }

// UnmarshalYAML accepts an integer or a ParseRate string.
func (r *Rate) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseScalar(n, ParseRate)
	if err != nil {
		return err
	}
	*r = Rate(v)
	return nil
}

// MarshalYAML writes the rate as "64MiB/s".
func (r Rate) MarshalYAML() (any, error) { return r.String(), nil }

// parseScalar applies parse to a scalar node, turning failures into a
// yaml.TypeError with the node's line.
func parseScalar(n *yaml.Node, parse func(string) (int64, error)) (int64, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, typeErr(n, "want a size such as 64MiB, got a %s", kindName(n.Kind))
	}
	v, err := parse(n.Value)
	if err != nil {
		return 0, typeErr(n, "%v", strings.TrimPrefix(err.Error(), "configs: "))
	}
	return v, nil
}

// typeErr builds the yaml.TypeError that lets the decoder continue.
func typeErr(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s", n.Line, fmt.Sprintf(format, args...))}}
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	case yaml.DocumentNode:
		return "document"
	}
	return "scalar"
}
