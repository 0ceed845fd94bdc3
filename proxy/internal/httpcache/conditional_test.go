package httpcache

import (
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

func TestETagMatch(t *testing.T) {
	tests := []struct {
		a, b         string
		weak, strong bool
	}{
		{`"1"`, `"1"`, true, true},
		{`W/"1"`, `W/"1"`, true, false},
		{`W/"1"`, `"1"`, true, false},
		{`"1"`, `"2"`, false, false},
		{`W/"1"`, `W/"2"`, false, false},
		{` "1" `, `"1"`, true, true},
		{`w/"1"`, `"1"`, false, false}, // the weak indicator is case-sensitive
		{``, ``, false, false},
		{`abc`, `abc`, true, true}, // unquoted: compared as sent
	}
	for _, tt := range tests {
		if got := etagMatchWeak([]byte(tt.a), []byte(tt.b)); got != tt.weak {
			t.Errorf("RFC 9110 §8.8.3.2 weak(%q, %q) = %v", tt.a, tt.b, got)
		}
		if got := ETagMatchStrong([]byte(tt.a), []byte(tt.b)); got != tt.strong {
			t.Errorf("RFC 9110 §8.8.3.2 strong(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

func TestNotModified(t *testing.T) {
	lm := testNow.Add(-time.Hour)
	tests := []struct {
		name    string
		method  string
		headers []string
		etag    string
		lm      time.Time
		want    bool
	}{
		{"§13.1.2 INM matches", "GET", []string{`If-None-Match: "a"`}, `"a"`, lm, true},
		{"§13.1.2 INM weak comparison", "GET", []string{`If-None-Match: W/"a"`}, `"a"`, lm, true},
		{"§13.1.2 INM list", "GET", []string{`If-None-Match: "x", "a,b" , W/"a"`}, `"a,b"`, lm, true},
		{"§13.1.2 INM across lines", "GET", []string{`If-None-Match: "x"`, `If-None-Match: "a"`}, `"a"`, lm, true},
		{"§13.1.2 INM star", "GET", []string{`If-None-Match: *`}, `"a"`, lm, true},
		{"§13.1.2 INM no match", "GET", []string{`If-None-Match: "x"`}, `"a"`, lm, false},
		{"§13.1.2 INM without stored ETag", "GET", []string{`If-None-Match: "x"`}, "", lm, false},
		{"§13.2.2 INM decides, IMS ignored", "GET", []string{`If-None-Match: "x"`, "If-Modified-Since: " + testDate(0)}, `"a"`, lm, false},
		{"§13.1.3 IMS not modified", "GET", []string{"If-Modified-Since: " + testDate(-3600)}, "", lm, true},
		{"§13.1.3 IMS later", "GET", []string{"If-Modified-Since: " + testDate(0)}, "", lm, true},
		{"§13.1.3 IMS modified since", "GET", []string{"If-Modified-Since: " + testDate(-7200)}, "", lm, false},
		{"§13.1.3 IMS on HEAD", "HEAD", []string{"If-Modified-Since: " + testDate(0)}, "", lm, true},
		{"§13.1.3 IMS invalid ignored", "GET", []string{"If-Modified-Since: yesterday"}, "", lm, false},
		{"§13.1.3 IMS twice ignored", "GET", []string{"If-Modified-Since: " + testDate(0), "If-Modified-Since: " + testDate(0)}, "", lm, false},
		{"§13.1.3 IMS without Last-Modified", "GET", []string{"If-Modified-Since: " + testDate(0)}, "", time.Time{}, false},
		{"§13.1.3 obsolete date format", "GET", []string{"If-Modified-Since: Sunday, 01-Jun-25 12:00:00 GMT"}, "", lm, true},
		{"§13.1.2 only GET and HEAD", "DELETE", []string{`If-None-Match: "a"`}, `"a"`, lm, false},
		{"no conditional", "GET", nil, `"a"`, lm, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := testRequest(t, tt.method, "/", tt.headers...)
			var etag []byte
			if tt.etag != "" {
				etag = []byte(tt.etag)
			}
			if got := NotModified(&req.Header, etag, tt.lm); got != tt.want {
				t.Errorf("NotModified = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNotModifiedAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	req := testRequest(t, "GET", "/", `If-None-Match: "x", W/"abc"`)
	etag := []byte(`"abc"`)
	if n := testing.AllocsPerRun(100, func() { NotModified(&req.Header, etag, testNow) }); n != 0 {
		t.Errorf("NotModified allocates %v times per run, want 0", n)
	}
	req = testRequest(t, "GET", "/", "If-Modified-Since: "+testDate(0))
	if n := testing.AllocsPerRun(100, func() { NotModified(&req.Header, nil, testNow) }); n != 0 {
		t.Errorf("NotModified (IMS) allocates %v times per run, want 0", n)
	}
}

func TestIfRange(t *testing.T) {
	lm := testNow.Add(-time.Hour)
	lmDate := "If-Range: " + testDate(-3600)
	tests := []struct {
		name     string
		headers  []string
		etag     string
		lm, date time.Time
		want     bool
	}{
		{"§13.1.5 absent", nil, `"a"`, lm, testNow, true},
		{"§13.1.5 strong match", []string{`If-Range: "a"`}, `"a"`, lm, testNow, true},
		{"§13.1.5 mismatch", []string{`If-Range: "b"`}, `"a"`, lm, testNow, false},
		{"§13.1.5 weak never matches", []string{`If-Range: W/"a"`}, `W/"a"`, lm, testNow, false},
		{"§13.1.5 weak stored tag", []string{`If-Range: "a"`}, `W/"a"`, lm, testNow, false},
		{"§13.1.5 date equal and strong", []string{lmDate}, "", lm, testNow, true},
		{"§8.8.2.2 date within 60s of Date is weak", []string{lmDate}, "", lm, lm.Add(30 * time.Second), false},
		{"§13.1.5 date differs", []string{"If-Range: " + testDate(-3599)}, "", lm, testNow, false},
		{"§13.1.5 no Last-Modified", []string{lmDate}, `"a"`, time.Time{}, testNow, false},
		{"§13.1.5 invalid value", []string{"If-Range: yesterday"}, `"a"`, lm, testNow, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := testRequest(t, "GET", "/", tt.headers...)
			if got := IfRange(&req.Header, []byte(tt.etag), tt.lm, tt.date); got != tt.want {
				t.Errorf("IfRange = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSelects304(t *testing.T) {
	lm := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	lmS := string(fasthttp.AppendHTTPDate(nil, lm))
	other := string(fasthttp.AppendHTTPDate(nil, lm.Add(time.Second)))
	for _, tc := range []struct {
		name     string
		etag     string
		lm       time.Time
		hdr      []string
		selected bool
	}{
		{"strong equal", `"a"`, time.Time{}, []string{`ETag: "a"`}, true},
		{"strong differs", `"a"`, time.Time{}, []string{`ETag: "b"`}, false},
		{"strong vs stored weak", `W/"a"`, time.Time{}, []string{`ETag: "a"`}, false},
		{"weak equal", `W/"a"`, time.Time{}, []string{`ETag: W/"a"`}, true},
		{"weak vs stored strong", `"a"`, time.Time{}, []string{`ETag: W/"a"`}, false},
		{"etag decides over lm", `"a"`, lm, []string{`ETag: "b"`, "Last-Modified: " + lmS}, false},
		{"lm equal", "", lm, []string{"Last-Modified: " + lmS}, true},
		{"lm differs", "", lm, []string{"Last-Modified: " + other}, false},
		{"lm invalid", "", lm, []string{"Last-Modified: soon"}, false},
		{"none confirms the stored response", `"a"`, lm, nil, true},
		{"none, stored has none", "", time.Time{}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var etag []byte
			if tc.etag != "" {
				etag = []byte(tc.etag)
			}
			if got := Selects304(testResponse(t, "304 Not Modified", tc.hdr...), etag, tc.lm); got != tc.selected {
				t.Fatalf("selected %v, want %v", got, tc.selected)
			}
		})
	}
}
