package accesslog

import (
	"encoding/json"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 7, 45, 1, 123456789, time.FixedZone("", 3600))

func entry() *Entry {
	return &Entry{Time: t0, Remote: netip.MustParseAddr("192.0.2.7"), Method: []byte("GET"),
		URI: []byte("/a/b?c=1"), Proto: []byte("HTTP/1.1"), Status: 200, Bytes: 1024,
		Referer: []byte("http://r.example/"), UserAgent: []byte("curl/8.0"), Duration: 1500 * time.Microsecond,
		CacheStatus: "hit", Detail: "hit; detail=memory", Tier: "memory"}
}

func TestAppendCombined(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(e *Entry)
		want string
	}{
		{"whole", func(*Entry) {},
			`192.0.2.7 - - [02/Dec/2026:07:45:01 +0100] "GET /a/b?c=1 HTTP/1.1" 200 1024 "http://r.example/" "curl/8.0"` + "\n"},
		{"empty referer, agent and body", func(e *Entry) { e.Referer, e.UserAgent, e.Bytes, e.Status = nil, nil, 0, 304 },
			`192.0.2.7 - - [02/Dec/2026:07:45:01 +0100] "GET /a/b?c=1 HTTP/1.1" 304 - "-" "-"` + "\n"},
		{"quotes, backslash, control and high bytes escaped", func(e *Entry) {
			e.URI, e.UserAgent = []byte("/x\"y\\z"), []byte("a\nb\x7f\xc3\xa9")
		}, `192.0.2.7 - - [02/Dec/2026:07:45:01 +0100] "GET /x\"y\\z HTTP/1.1" 200 1024 "http://r.example/" "a\x0ab\x7f\xc3\xa9"` + "\n"},
		{"IPv4-mapped IPv6 as IPv4", func(e *Entry) { e.Remote = netip.MustParseAddr("::ffff:10.0.0.1") },
			`10.0.0.1 - - [02/Dec/2026:07:45:01 +0100] "GET /a/b?c=1 HTTP/1.1" 200 1024 "http://r.example/" "curl/8.0"` + "\n"},
		{"IPv6", func(e *Entry) { e.Remote = netip.MustParseAddr("2001:db8::1") },
			`2001:db8::1 - - [02/Dec/2026:07:45:01 +0100] "GET /a/b?c=1 HTTP/1.1" 200 1024 "http://r.example/" "curl/8.0"` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := entry()
			tc.edit(e)
			if got := string(AppendCombined(nil, e)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

type jsonLine struct {
	Time         string   `json:"time"`
	Remote       string   `json:"remote"`
	Method       string   `json:"method"`
	URI          string   `json:"uri"`
	Proto        string   `json:"proto"`
	Status       int      `json:"status"`
	Bytes        int64    `json:"bytes"`
	DurationMS   float64  `json:"duration_ms"`
	CacheStatus  string   `json:"cache_status"`
	CacheDetail  string   `json:"cache_detail"`
	Tier         string   `json:"tier"`
	Referer      string   `json:"referer"`
	UserAgent    string   `json:"user_agent"`
	OriginStatus *int     `json:"origin_status"`
	OriginMS     *float64 `json:"origin_ms"`
}

func TestAppendJSON(t *testing.T) {
	e := entry()
	got := string(AppendJSON(nil, e))
	want := `{"time":"2026-12-02T07:45:01.123+01:00","remote":"192.0.2.7","method":"GET","uri":"/a/b?c=1","proto":"HTTP/1.1","status":200,"bytes":1024,"duration_ms":1.500,"cache_status":"hit","cache_detail":"hit; detail=memory","tier":"memory","referer":"http://r.example/","user_agent":"curl/8.0"}` + "\n"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	e.CacheStatus, e.Tier, e.OriginStatus, e.OriginDuration = "miss", "none", 200, 2250*time.Microsecond
	e.UserAgent = []byte("q\"\x01\xff√")
	var l jsonLine
	if err := json.Unmarshal(AppendJSON(nil, e), &l); err != nil {
		t.Fatal(err)
	}
	if l.OriginStatus == nil || *l.OriginStatus != 200 || l.OriginMS == nil || *l.OriginMS != 2.25 {
		t.Errorf("origin fields %v %v, want 200 and 2.25", l.OriginStatus, l.OriginMS)
	}
	if l.UserAgent != "q\"\x01\uFFFD√" {
		t.Errorf("user_agent %q", l.UserAgent)
	}
}

var combinedRE = regexp.MustCompile(`^(\S+) - - \[([^\]]+)\] "((?:[^"\\]|\\.)*) ((?:[^"\\]|\\.)*) ((?:[^"\\]|\\.)*)" (\d+) (\d+|-) "((?:[^"\\]|\\.)*)" "((?:[^"\\]|\\.)*)"\n$`)

// FuzzFormats: whatever the client sends, a combined line is one line of
// printable ASCII that the combined pattern reads, and a JSON line is one
// valid JSON object whose strings decode to the input (with invalid UTF-8
// replaced).
func FuzzFormats(f *testing.F) {
	f.Add("GET", "/a?b", "HTTP/1.1", "ref", "agent")
	f.Add("G\"T", "/\\\n", "", "\xff\xfe", "\x00")
	f.Fuzz(func(t *testing.T, method, uri, proto, ref, ua string) {
		if strings.ContainsAny(method+uri+proto, " ") {
			return // fasthttp splits the request line on spaces: none inside
		}
		e := entry()
		e.Method, e.URI, e.Proto, e.Referer, e.UserAgent = []byte(method), []byte(uri), []byte(proto), []byte(ref), []byte(ua)
		c := AppendCombined(nil, e)
		for _, b := range c[:len(c)-1] {
			if b < 0x20 || b >= 0x7f {
				t.Fatalf("combined line has byte %#x: %q", b, c)
			}
		}
		if !combinedRE.Match(c) {
			t.Fatalf("combined line not readable: %q", c)
		}
		j := AppendJSON(nil, e)
		var l jsonLine
		if err := json.Unmarshal(j, &l); err != nil {
			t.Fatalf("json %q: %v", j, err)
		}
		// Each invalid byte decodes as U+FFFD: without those (and the
		// input's own), the strings agree.
		strip := func(s string) string { return strings.ReplaceAll(strings.ToValidUTF8(s, ""), "\uFFFD", "") }
		if strip(l.URI) != strip(uri) || strip(l.UserAgent) != strip(ua) {
			t.Fatalf("uri %q, user agent %q decoded as %q, %q", uri, ua, l.URI, l.UserAgent)
		}
		if strings.Count(string(j), "\n") != 1 {
			t.Fatalf("json line spans lines: %q", j)
		}
	})
}

// TestStampMatchesFormat: the cached per-second stamps give the same
// bytes as formatting each time, across seconds, milliseconds and zones
// (lines of different zones alternating, as a cache must not confuse).
func TestStampMatchesFormat(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+30*60), time.FixedZone("", -7*3600), time.Local}
	base := time.Date(2026, 12, 2, 8, 59, 58, 0, time.UTC)
	for i := range 400 {
		tm := base.Add(time.Duration(i) * 7 * time.Millisecond).In(zones[i%len(zones)])
		e := &Entry{Time: tm}
		line := string(AppendCombined(nil, e))
		if want := "[" + tm.Format(combinedTime) + "]"; !strings.Contains(line, want) {
			t.Fatalf("combined %q lacks %q", line, want)
		}
		j := string(AppendJSON(nil, e))
		if want := `{"time":"` + tm.Format(jsonTime) + `"`; !strings.HasPrefix(j, want) {
			t.Fatalf("json %q, want prefix %q", j, want)
		}
	}
}
