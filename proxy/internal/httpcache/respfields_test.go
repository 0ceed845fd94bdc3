package httpcache

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// storeFieldLines are the lines the StoreDecision equivalence tests draw
// from: every field StoreDecision reads, valid and not, in odd cases, and
// fields it must ignore.
var storeFieldLines = []string{
	"Cache-Control: public, max-age=60",
	"Cache-Control: max-age=0",
	"cache-control: no-store",
	"Cache-Control: private",
	"Cache-Control: s-maxage=30, must-revalidate",
	"Cache-Control: no-cache, stale-while-revalidate=20",
	"Cache-Control: must-understand, no-store",
	"Cache-Control: stale-if-error=300",
	"CDN-Cache-Control: max-age=120",
	"Cdn-Cache-Control: no-store",
	"CDN-Cache-Control: max-age=\"60\"",
	"Strata-Cache-Control: max-age=5, private",
	"strata-cache-control: ,",
	"X-Edge-Control: max-age=900",
	"Surrogate-Control: max-age=600",
	"Surrogate-Control: no-store;strata",
	"Surrogate-Control: max-age=10;other",
	"Date: " + testDate(0),
	"Date: " + testDate(-30),
	"Date: not a date",
	"Expires: " + testDate(300),
	"Expires: " + testDate(600),
	"Expires: 0",
	"Last-Modified: " + testDate(-86400),
	"last-modified: " + testDate(-600),
	"Age: 15",
	"Age: , 20",
	"Age: -1",
	`ETag: "abc"`,
	`etag: W/"xyz"`,
	"ETag:",
	"Vary: Accept-Encoding",
	"Vary: *",
	"vary: Accept-Language, *",
	"Set-Cookie: a=b",
	"Content-Type: text/html",
	"Pragma: no-cache",
	"X-Other: max-age=1",
}

// storeOptionVariants are the PolicyOptions the equivalence tests run
// under.
func storeOptionVariants() []PolicyOptions {
	var os []PolicyOptions
	for i := range 6 {
		o := PolicyOptions{Shared: i != 5}
		switch i {
		case 1:
			o.TargetedField = "X-Edge-Control"
			o.IgnoreCDNCacheControl = true
		case 2:
			o.StoreSetCookie, o.Grace = true, 1
		case 3:
			o.IgnoreSurrogateControl = true
			o.DefaultTTL = 60e9
		case 4:
			o.TargetedField = "surrogate-control" // odd, but a name StoreDecision reads twice
		}
		o.EnsureDefaults()
		os = append(os, o)
	}
	return os
}

// checkStoreGathered runs StoreDecision on a response of lines twice,
// from the gathered fields and from Peek/PeekAll lookups (the way it read
// them before the walk), and fails when the answers differ.
func checkStoreGathered(t *testing.T, status string, lines []string) {
	t.Helper()
	h := testResponse(t, status, lines...)
	code := h.StatusCode()
	for _, rp := range storeRequestVariants(t) {
		for _, o := range storeOptionVariants() {
			var walked, peeked StoreInfo
			var f respFields
			f.gather(h, &o)
			storeDecide(&walked, &rp, code, &f, testNow, &o)
			p := respFields{h: h, peek: true}
			storeDecide(&peeked, &rp, code, &p, testNow, &o)
			// The lookups cannot tell whether a field is there: they
			// report it may be. The walk must know.
			vary := f.peek || len(h.PeekAll("Vary")) > 0
			surrogate := f.peek || len(h.PeekAll(surrogateControl)) > 0 || len(h.PeekAll(o.TargetedField)) > 0
			if walked.MayVary != vary || walked.MaySurrogate != surrogate || !peeked.MayVary || !peeked.MaySurrogate {
				t.Fatalf("status %s, lines %q: MayVary walk %v lookup %v (want %v), MaySurrogate walk %v lookup %v (want %v)",
					status, lines, walked.MayVary, peeked.MayVary, vary, walked.MaySurrogate, peeked.MaySurrogate, surrogate)
			}
			peeked.MayVary, peeked.MaySurrogate = walked.MayVary, walked.MaySurrogate
			if !reflect.DeepEqual(walked, peeked) {
				t.Fatalf("status %s, lines %q, options %+v, request %+v:\nwalk   %+v\nlookup %+v",
					status, lines, o, rp, walked, peeked)
			}
		}
	}
}

func storeRequestVariants(t *testing.T) []RequestPolicy {
	var rps []RequestPolicy
	for _, hs := range [][]string{nil, {"Authorization: Basic eA=="}, {"Cache-Control: no-store"}} {
		var rp RequestPolicy
		ParseRequest(&rp, &testRequest(t, "GET", "/", hs...).Header)
		rps = append(rps, rp)
	}
	return rps
}

// TestStoreDecisionGathered pins StoreDecision's one walk over the
// response fields to the lookups it replaced, case by case.
func TestStoreDecisionGathered(t *testing.T) {
	tests := []struct {
		name   string
		status string
		lines  []string
	}{
		{"none", "200 OK", nil},
		{"typical", "200 OK", []string{"Date: " + testDate(0), "Cache-Control: public, max-age=3600",
			`ETag: "5d8c"`, "Last-Modified: " + testDate(-86400), "Content-Type: application/octet-stream"}},
		{"two Cache-Control lines", "200 OK", []string{"Cache-Control: public", "Cache-Control: max-age=60"}},
		{"Expires lines that agree", "200 OK", []string{"Expires: " + testDate(60), "Expires: " + testDate(60)}},
		{"Expires lines that disagree", "200 OK", []string{"Expires: " + testDate(60), "Expires: " + testDate(61)}},
		{"first Date wins", "200 OK", []string{"Date: " + testDate(-10), "Date: " + testDate(0), "Expires: " + testDate(60)}},
		{"first ETag wins", "200 OK", []string{`ETag: "a"`, `ETag: "b"`, "Cache-Control: no-cache"}},
		{"Age on a later line", "200 OK", []string{"Age: ,", "Age: 30", "Cache-Control: max-age=60"}},
		{"targeted over Cache-Control", "200 OK", []string{"Cache-Control: no-store", "CDN-Cache-Control: max-age=60",
			"Expires: " + testDate(10)}},
		{"invalid targeted field", "200 OK", []string{"CDN-Cache-Control: max-age=60, ", "Cache-Control: max-age=5"}},
		{"Set-Cookie", "200 OK", []string{"Set-Cookie: a=b", "Cache-Control: max-age=60"}},
		{"Vary star on a second line", "200 OK", []string{"Vary: Accept", "Vary: *", "Cache-Control: max-age=60"}},
		{"five Cache-Control lines (lookups)", "200 OK", []string{"Cache-Control: public", "Cache-Control: max-age=1",
			"Cache-Control: max-age=2", "Cache-Control: no-cache", "Cache-Control: s-maxage=9"}},
		{"announced trailer (lookups)", "200 OK", []string{"Trailer: Cache-Control", "Cache-Control: no-store",
			"Transfer-Encoding: chunked"}},
		{"404 heuristic", "404 Not Found", []string{"Last-Modified: " + testDate(-3600), "Date: " + testDate(0)}},
		{"206 must-understand", "206 Partial Content", []string{"Cache-Control: must-understand, no-store, max-age=60"}},
		{"304", "304 Not Modified", []string{"Cache-Control: max-age=60"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkStoreGathered(t, tt.status, tt.lines) })
	}
}

// TestStoreDecisionGatheredRandom is TestStoreDecisionGathered over random
// draws of storeFieldLines, repeats included.
func TestStoreDecisionGatheredRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	statuses := []string{"200 OK", "203 OK", "302 Found", "404 Not Found", "500 Internal Server Error", "206 Partial Content"}
	for range 400 {
		n := r.IntN(10)
		lines := make([]string, n)
		for i := range lines {
			lines[i] = storeFieldLines[r.IntN(len(storeFieldLines))]
		}
		checkStoreGathered(t, statuses[r.IntN(len(statuses))], lines)
	}
}

// TestRespFieldsFallBack: the walk hands the decision to the lookups for
// an announced trailer and for a field with more lines than it keeps.
func TestRespFieldsFallBack(t *testing.T) {
	o := defaultPolicyOptions()
	for _, tt := range []struct {
		lines []string
		peek  bool
	}{
		{[]string{"Cache-Control: max-age=1"}, false},
		{strings.Split(strings.Repeat("Vary: a\n", maxFieldLines), "\n")[:maxFieldLines], false},
		{strings.Split(strings.Repeat("Vary: a\n", maxFieldLines+1), "\n")[:maxFieldLines+1], true},
		{[]string{"Trailer: Expires", "Transfer-Encoding: chunked"}, true},
	} {
		var f respFields
		f.gather(testResponse(t, "200 OK", tt.lines...), &o)
		if f.peek != tt.peek {
			t.Errorf("%q: peek = %v, want %v", tt.lines, f.peek, tt.peek)
		}
	}
}
