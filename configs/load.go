package configs

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Default is configs/default.yaml, the config the binary runs without
// -config.
//
//go:embed default.yaml
var Default []byte

// DefaultName is the file name Problems of Default carry.
const DefaultName = "default.yaml"

// MaxFileBytes bounds a config file; a larger one is refused unread.
const MaxFileBytes = 1 << 20

// LoadDefault loads Default.
func LoadDefault() (*Config, error) { return Load(Default, DefaultName) }

// LoadFile reads and loads the config at path.
func LoadFile(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("configs: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("configs: %s: %w", path, err)
	}
	return Load(data, path)
}

// Load decodes data strictly (unknown keys are errors), fills defaults and
// validates. On any problem it returns nil and Problems (wrapping
// ErrInvalid) listing every one, each with name and the line of its key,
// ordered by line. name is only used in messages.
func Load(data []byte, name string) (*Config, error) {
	if len(data) > MaxFileBytes {
		return nil, Problems{{File: name, Msg: fmt.Sprintf("larger than %v", Size(MaxFileBytes))}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, Problems{yamlProblem(name, err.Error())}
	}
	pos := newPositions(&root)
	c, ps := decodeStrict(data, name, pos)
	c.EnsureDefaults()
	if err := c.Validate(); err != nil && !decodeAborted(&root, ps) {
		bad := map[int]bool{}
		for _, p := range ps {
			bad[p.Line] = true
		}
		for _, p := range err.(Problems) {
			p.File, p.Line = name, pos.line(p.Field)
			if p.Line == 0 || !bad[p.Line] { // a decode problem on that line says it already
				ps = append(ps, p)
			}
		}
	}
	if len(ps) > 0 {
		ps = dedupe(ps)
		sort.SliceStable(ps, func(i, j int) bool { return lineKey(ps[i].Line) < lineKey(ps[j].Line) })
		return nil, ps
	}
	return c, nil
}

// decodeAborted reports whether decoding gave up on whole parts of the
// file (a root that is not a mapping, a duplicate key), so that validating
// what was decoded would report noise.
func decodeAborted(root *yaml.Node, ps Problems) bool {
	if len(ps) == 0 {
		return false
	}
	if len(root.Content) > 0 && root.Content[0].Kind != yaml.MappingNode {
		return true
	}
	for _, p := range ps {
		if strings.Contains(p.Msg, "already defined at line") {
			return true
		}
	}
	return false
}

// dedupe drops repeated problems (yaml.v3 repeats one per aliased copy).
func dedupe(ps Problems) Problems {
	seen := map[Problem]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// lineKey orders problems by line, those without one last.
func lineKey(l int) int {
	if l == 0 {
		return 1 << 62
	}
	return l
}

// decodeStrict decodes the one document of data into a Config, collecting
// every type error and unknown key.
func decodeStrict(data []byte, name string, pos *positions) (*Config, Problems) {
	c := new(Config)
	var ps Problems
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(c)
	var te *yaml.TypeError
	switch {
	case err == nil, errors.Is(err, io.EOF):
	case errors.As(err, &te):
		for _, msg := range te.Errors {
			p := yamlProblem(name, msg)
			p.Field = pos.field(p.Line)
			p.Msg = friendlier(p.Msg)
			ps = append(ps, p)
		}
	default:
		return c, Problems{yamlProblem(name, err.Error())}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		ps = append(ps, Problem{File: name, Line: extra.Line, Msg: "only one YAML document is allowed"})
	}
	return c, ps
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)

// yamlProblem turns a yaml.v3 message ("yaml: line 3: ...") into a Problem.
func yamlProblem(name, msg string) Problem {
	p := Problem{File: name, Msg: strings.TrimPrefix(msg, "yaml: ")}
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		p.Line, _ = strconv.Atoi(m[1])
		p.Msg = msg[len(m[0]):]
	}
	return p
}

var (
	unknownRE = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	typeRE    = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+)$")
	goTypes   = map[string]string{"int": "an integer", "bool": "true or false", "float64": "a number",
		"string": "a string", "[]string": "a list of strings"}
)

// friendlier rewrites yaml.v3's Go-flavoured messages in the config's terms.
func friendlier(msg string) string {
	if m := unknownRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("unknown key %q", m[1])
	}
	if m := typeRE.FindStringSubmatch(msg); m != nil {
		want, ok := goTypes[m[3]]
		if !ok {
			want = "a mapping"
			if strings.HasPrefix(m[3], "[]") {
				want = "a list"
			}
		}
		if m[2] == "" {
			return fmt.Sprintf("wrong type: got a %s, want %s", m[1], want)
		}
		return fmt.Sprintf("wrong type: got %s %q, want %s", m[1], m[2], want)
	}
	return msg
}

// positions maps YAML paths ("cache.disk.size", "origins[1].url") to the
// line of their key, and lines back to the first path starting there.
type positions struct {
	lines  map[string]int
	fields map[int]string
}

func newPositions(root *yaml.Node) *positions {
	p := &positions{lines: map[string]int{}, fields: map[int]string{}}
	p.walk(root, "")
	return p
}

// walk records n's children. It does not follow aliases, so an alias bomb
// costs one entry.
func (p *positions) walk(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			p.walk(c, path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := path + "." + n.Content[i].Value
			if path == "" {
				k = n.Content[i].Value
			}
			p.record(k, n.Content[i].Line)
			p.walk(n.Content[i+1], k)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			k := fmt.Sprintf("%s[%d]", path, i)
			p.record(k, c.Line)
			p.walk(c, k)
		}
	}
}

func (p *positions) record(path string, line int) {
	if _, ok := p.lines[path]; !ok {
		p.lines[path] = line
	}
	if _, ok := p.fields[line]; !ok {
		p.fields[line] = path
	}
}

// line returns the line of path, or of its nearest present ancestor, or 0.
func (p *positions) line(path string) int {
	for path != "" {
		if l, ok := p.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return 0
		}
		path = path[:i]
	}
	return 0
}

// field returns the path whose key starts on line, or "".
func (p *positions) field(line int) string { return p.fields[line] }

// Marshal renders c as YAML that Load reads back to an equal Config.
func (c *Config) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("configs: marshal: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("configs: marshal: %w", err)
	}
	return b.Bytes(), nil
}
