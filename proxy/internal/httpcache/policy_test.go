package httpcache

import (
	"bufio"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// testRequest parses a request from its wire form, so repeated header lines
// and odd spellings reach the code as they would from a client.
func testRequest(t testing.TB, method, uri string, headers ...string) *fasthttp.Request {
	t.Helper()
	var b strings.Builder
	b.WriteString(method + " " + uri + " HTTP/1.1\r\n")
	if !testHasHeader(headers, "host") {
		b.WriteString("Host: example.com\r\n")
	}
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	req := new(fasthttp.Request)
	if err := req.Read(bufio.NewReader(strings.NewReader(b.String()))); err != nil {
		t.Fatalf("parsing test request: %v\n%s", err, b.String())
	}
	return req
}

func testHasHeader(headers []string, name string) bool {
	for _, h := range headers {
		if k, _, ok := strings.Cut(h, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return true
		}
	}
	return false
}

// testResponse parses a response header from its wire form.
func testResponse(t testing.TB, status string, headers ...string) *fasthttp.ResponseHeader {
	t.Helper()
	var b strings.Builder
	b.WriteString("HTTP/1.1 " + status + "\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	if !testHasHeader(headers, "content-length") {
		b.WriteString("Content-Length: 0\r\n")
	}
	b.WriteString("\r\n")
	h := new(fasthttp.ResponseHeader)
	if err := h.Read(bufio.NewReader(strings.NewReader(b.String()))); err != nil {
		t.Fatalf("parsing test response: %v\n%s", err, b.String())
	}
	return h
}

// defaultPolicyOptions returns the defaults proxy applies: a shared
// cache, heuristic fraction 0.1 capped at 24h, no default TTL, Set-Cookie
// not stored, no grace.
func defaultPolicyOptions() PolicyOptions {
	o := PolicyOptions{Shared: true}
	o.EnsureDefaults()
	return o
}

var testNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// testDate formats testNow + offset seconds as an IMF-fixdate.
func testDate(offset int) string {
	return string(fasthttp.AppendHTTPDate(nil, testNow.Add(time.Duration(offset)*time.Second)))
}

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		headers []string
		check   func(t *testing.T, rp *RequestPolicy)
	}{
		{"§3 GET is cacheable", "GET", nil, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, rp.Cacheable && rp.Reason == "" && !rp.Head, "GET cacheable")
		}},
		{"§3 HEAD is cacheable", "HEAD", nil, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, rp.Cacheable && rp.Head, "HEAD cacheable")
		}},
		{"§3 POST is not", "POST", []string{"Content-Length: 0"}, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, !rp.Cacheable && rp.Reason == ReasonMethod, "POST not cacheable: %+v", rp)
		}},
		{"§4.3.2 If-Match is for the origin", "GET", []string{`If-Match: "a"`}, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, !rp.Cacheable && rp.Reason == ReasonPrecondition, "If-Match: %+v", rp)
		}},
		{"§4.3.2 If-Unmodified-Since is for the origin", "GET", []string{"If-Unmodified-Since: " + testDate(0)}, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, !rp.Cacheable && rp.Reason == ReasonPrecondition, "IUS: %+v", rp)
		}},
		{"§5.2 request lines merge", "GET", []string{"Cache-Control: max-age=5", "Cache-Control: no-store"}, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, rp.CC.MaxAge == 5 && rp.CC.NoStore && rp.Cacheable, "merged: %+v", rp.CC)
		}},
		{"§5.4 Pragma no-cache without Cache-Control", "GET", []string{"Pragma: foo, No-Cache"}, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, rp.CC.NoCache && rp.PragmaNoCache, "pragma: %+v", rp)
		}},
		{"§5.4 Pragma ignored with Cache-Control", "GET", []string{"Pragma: no-cache", "Cache-Control: max-age=9"}, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, !rp.CC.NoCache && !rp.PragmaNoCache && rp.CC.MaxAge == 9, "pragma ignored: %+v", rp)
		}},
		{"§5.4 other Pragma ignored", "GET", []string{"Pragma: no-cachex"}, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, !rp.CC.NoCache, "pragma: %+v", rp)
		}},
		{"§3.5 Authorization noted", "GET", []string{"Authorization: Bearer x"}, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, rp.HasAuthorization && rp.Cacheable, "auth: %+v", rp)
		}},
		{"RFC 9110 §13 conditionals and Range noted", "GET", []string{`If-None-Match: "a"`, "Range: bytes=0-1"}, func(t *testing.T, rp *RequestPolicy) {
			testExpect(t, rp.Conditional && rp.HasRange, "conditional: %+v", rp)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := testRequest(t, tt.method, "/x", tt.headers...)
			var rp RequestPolicy
			rp.CC.MaxAge = 77 // must be reset
			ParseRequest(&rp, &req.Header)
			tt.check(t, &rp)
		})
	}
}

func testExpect(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf("expected "+format, args...)
	}
}

func TestStoreDecision(t *testing.T) {
	shared := defaultPolicyOptions()
	private := defaultPolicyOptions()
	private.Shared = false
	withTTL := defaultPolicyOptions()
	withTTL.DefaultTTL = time.Minute
	cookies := defaultPolicyOptions()
	cookies.StoreSetCookie = true
	noHeur := defaultPolicyOptions()
	noHeur.HeuristicFraction = -1
	graced := defaultPolicyOptions()
	graced.Grace = time.Hour
	d0 := "Date: " + testDate(0)
	tests := []struct {
		name     string
		o        PolicyOptions
		req      []string
		method   string
		status   string
		resp     []string
		store    bool
		reason   string
		lifetime time.Duration
	}{
		{"§4.2.1 max-age", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60"}, true, "", time.Minute},
		{"§4.2.1 s-maxage beats max-age when shared", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60, s-maxage=5"}, true, "", 5 * time.Second},
		{"§4.2.1 s-maxage ignored by a private cache", private, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60, s-maxage=5"}, true, "", time.Minute},
		{"§5.3 max-age beats Expires", shared, nil, "GET", "200 OK", []string{d0, "Expires: " + testDate(10), "Cache-Control: max-age=60"}, true, "", time.Minute},
		{"§4.2.1 Expires - Date", shared, nil, "GET", "200 OK", []string{d0, "Expires: " + testDate(90)}, true, "", 90 * time.Second},
		{"§4.2.1 Expires in the past, no validator: not reusable", shared, nil, "GET", "200 OK", []string{d0, "Expires: " + testDate(-90)}, false, ReasonNoValidator, 0},
		{"§5.3 invalid Expires is in the past", shared, nil, "GET", "200 OK", []string{d0, "Expires: 0", `ETag: "a"`}, true, "", 0},
		{"§4.2.1 conflicting Expires lines are stale", shared, nil, "GET", "200 OK", []string{d0, "Expires: " + testDate(90), "Expires: " + testDate(30), `ETag: "a"`}, true, "", 0},
		{"§5.3 Expires makes a 302 storable", shared, nil, "GET", "302 Found", []string{d0, "Expires: " + testDate(30), "Location: /y"}, true, "", 30 * time.Second},
		{"§4.2.2 heuristic 10% of Last-Modified age", shared, nil, "GET", "200 OK", []string{d0, "Last-Modified: " + testDate(-1000)}, true, "", 100 * time.Second},
		{"§4.2.2 heuristic capped", shared, nil, "GET", "200 OK", []string{d0, "Last-Modified: " + testDate(-30*86400)}, true, "", 24 * time.Hour},
		{"§4.2.2 heuristic for 404", shared, nil, "GET", "404 Not Found", []string{d0, "Last-Modified: " + testDate(-1000)}, true, "", 100 * time.Second},
		{"§4.2.2 no heuristic for 403", shared, nil, "GET", "403 Forbidden", []string{d0, "Last-Modified: " + testDate(-1000)}, false, ReasonNoFreshness, 0},
		{"§4.2.2 no heuristic for 503", shared, nil, "GET", "503 Service Unavailable", []string{d0, "Last-Modified: " + testDate(-1000)}, false, ReasonNoFreshness, 0},
		{"§4.2.2 public allows heuristic for 599", shared, nil, "GET", "599 Unknown", []string{d0, "Cache-Control: public", "Last-Modified: " + testDate(-1000)}, true, "", 100 * time.Second},
		{"§4.2.2 599 without public", shared, nil, "GET", "599 Unknown", []string{d0, "Last-Modified: " + testDate(-1000)}, false, ReasonNoFreshness, 0},
		{"§3 explicit freshness makes 599 storable", shared, nil, "GET", "599 Unknown", []string{d0, "Cache-Control: max-age=10"}, true, "", 10 * time.Second},
		{"§4.2.2 heuristic disabled", noHeur, nil, "GET", "200 OK", []string{d0, "Last-Modified: " + testDate(-1000)}, true, "", 0},
		{"§4.2.2 Last-Modified after Date gives nothing", shared, nil, "GET", "200 OK", []string{d0, "Last-Modified: " + testDate(100)}, true, "", 0},
		{"DefaultTTL without Last-Modified", withTTL, nil, "GET", "200 OK", []string{d0}, true, "", time.Minute},
		{"DefaultTTL not for 500", withTTL, nil, "GET", "500 Internal Server Error", []string{d0}, false, ReasonNoFreshness, 0},
		{"DefaultTTL never beats max-age=0", withTTL, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=0", `ETag: "a"`}, true, "", 0},
		{"§3 200 without anything: not reusable", shared, nil, "GET", "200 OK", []string{d0}, false, ReasonNoValidator, 0},
		{"§3 200 with only an ETag is stored (revalidate)", shared, nil, "GET", "200 OK", []string{d0, `ETag: "a"`}, true, "", 0},
		{"grace makes a zero-lifetime response worth storing", graced, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=0"}, true, "", 0},
		{"§3 POST response not stored", shared, nil, "POST", "200 OK", []string{d0, "Cache-Control: max-age=60"}, false, ReasonMethod, time.Minute},
		{"§3 304 is not stored", shared, nil, "GET", "304 Not Modified", []string{d0, "Cache-Control: max-age=60"}, false, ReasonStatus, time.Minute},
		{"§3 1xx is not final", shared, nil, "GET", "103 Early Hints", []string{d0, "Cache-Control: max-age=60"}, false, ReasonStatus, time.Minute},
		{"§5.2.2.5 response no-store", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60, no-store"}, false, ReasonNoStore, time.Minute},
		{"§5.2.1.5 request no-store", shared, []string{"Cache-Control: no-store"}, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60"}, false, ReasonNoStore, time.Minute},
		{"§5.2.2.3 must-understand overrides no-store", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60, no-store, must-understand"}, true, "", time.Minute},
		{"§5.2.2.3 must-understand, unknown status", shared, nil, "GET", "299 Odd", []string{d0, "Cache-Control: max-age=60, no-store, must-understand"}, false, ReasonMustUnderstand, time.Minute},
		{"§5.2.2.7 private, shared cache", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: private, max-age=60"}, false, ReasonPrivate, time.Minute},
		{"§5.2.2.7 private, private cache", private, nil, "GET", "200 OK", []string{d0, "Cache-Control: private, max-age=60"}, true, "", time.Minute},
		{"§3.5 Authorization refused", shared, []string{"Authorization: x"}, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60"}, false, ReasonAuthorization, time.Minute},
		{"§3.5 Authorization with public", shared, []string{"Authorization: x"}, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60, public"}, true, "", time.Minute},
		{"§3.5 Authorization with s-maxage", shared, []string{"Authorization: x"}, "GET", "200 OK", []string{d0, "Cache-Control: s-maxage=60"}, true, "", time.Minute},
		{"§3.5 Authorization with must-revalidate", shared, []string{"Authorization: x"}, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60, must-revalidate"}, true, "", time.Minute},
		{"§3.5 Authorization, private cache", private, []string{"Authorization: x"}, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60"}, true, "", time.Minute},
		{"Set-Cookie not stored by default", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60", "Set-Cookie: a=b"}, false, ReasonSetCookie, time.Minute},
		{"Set-Cookie stored when allowed", cookies, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60", "Set-Cookie: a=b"}, true, "", time.Minute},
		{"§4.1 Vary: * never stored", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60", "Vary: Accept, *"}, false, ReasonVaryStar, time.Minute},
		{"§4.1 Vary: * on a second line", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=60", "Vary: Accept", "Vary: *"}, false, ReasonVaryStar, time.Minute},
		{"§5.2.2.4 no-cache stored with a validator", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: no-cache, max-age=60", `ETag: "x"`}, true, "", time.Minute},
		{"§5.2.2.4 no-cache without validator: useless", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: no-cache, max-age=60"}, false, ReasonNoValidator, time.Minute},
		{"§4.2.1 negative max-age stale but stored with validator", shared, nil, "GET", "200 OK", []string{d0, "Cache-Control: max-age=-1", "Last-Modified: " + testDate(-100)}, true, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdrs := tt.req
			if tt.method == "POST" {
				hdrs = append(hdrs, "Content-Length: 0")
			}
			req := testRequest(t, tt.method, "/x", hdrs...)
			var rp RequestPolicy
			ParseRequest(&rp, &req.Header)
			h := testResponse(t, tt.status, tt.resp...)
			var si StoreInfo
			o := tt.o
			StoreDecision(&si, &rp, h.StatusCode(), h, testNow, &o)
			if si.Store != tt.store || si.Reason != tt.reason || si.Lifetime != tt.lifetime {
				t.Errorf("got store=%v reason=%q lifetime=%v; want %v %q %v", si.Store, si.Reason, si.Lifetime, tt.store, tt.reason, tt.lifetime)
			}
		})
	}
}

func TestStoreDecisionFields(t *testing.T) {
	o := defaultPolicyOptions()
	req := testRequest(t, "GET", "/x")
	var rp RequestPolicy
	ParseRequest(&rp, &req.Header)
	t.Run("§5.2.2.10 s-maxage implies proxy-revalidate", func(t *testing.T) {
		h := testResponse(t, "200 OK", "Cache-Control: s-maxage=5, stale-while-revalidate=10, stale-if-error=20", "Age: 3", `ETag: W/"v1"`)
		var si StoreInfo
		StoreDecision(&si, &rp, 200, h, testNow, &o)
		testExpect(t, si.MustRevalidate && si.StaleWhileRevalidate == 10*time.Second && si.StaleIfError == 20*time.Second,
			"windows: %+v", si.FreshnessInfo)
		testExpect(t, si.Age == 3 && string(si.ETag) == `W/"v1"`, "age/etag: %d %q", si.Age, si.ETag)
		testExpect(t, si.DateMissing && si.Date.Equal(testNow), "RFC 9110 §6.6.1 Date missing: %v", si.Date)
	})
	t.Run("§5.2.2.8 proxy-revalidate only when shared", func(t *testing.T) {
		h := testResponse(t, "200 OK", "Cache-Control: max-age=5, proxy-revalidate")
		var si StoreInfo
		StoreDecision(&si, &rp, 200, h, testNow, &o)
		testExpect(t, si.MustRevalidate, "shared: must revalidate")
		p := o
		p.Shared = false
		StoreDecision(&si, &rp, 200, h, testNow, &p)
		testExpect(t, !si.MustRevalidate, "private: no")
	})
	t.Run("RFC 5861 absent windows are negative", func(t *testing.T) {
		h := testResponse(t, "200 OK", "Cache-Control: max-age=5", "Date: "+testDate(-10), "Last-Modified: "+testDate(-20))
		var si StoreInfo
		StoreDecision(&si, &rp, 200, h, testNow, &o)
		testExpect(t, si.StaleWhileRevalidate < 0 && si.StaleIfError < 0, "windows: %+v", si.FreshnessInfo)
		testExpect(t, !si.DateMissing && si.Date.Equal(testNow.Add(-10*time.Second)), "date: %v", si.Date)
		testExpect(t, si.LastModified.Equal(testNow.Add(-20*time.Second)), "lm: %v", si.LastModified)
	})
}

// TestStoreDecisionMayFields: MayVary and MaySurrogate are false only
// for a header without the fields, which the caller then neither looks up
// nor deletes; a header whose announced trailers send the decision to the
// lookups reports both.
func TestStoreDecisionMayFields(t *testing.T) {
	o := defaultPolicyOptions()
	req := testRequest(t, "GET", "/x")
	var rp RequestPolicy
	ParseRequest(&rp, &req.Header)
	for _, tc := range []struct {
		name               string
		headers            []string
		vary, surrogateish bool
	}{
		{"neither", []string{"Cache-Control: max-age=60", `ETag: "e"`}, false, false},
		{"vary", []string{"Cache-Control: max-age=60", "vary: Accept-Encoding"}, true, false},
		{"surrogate-control", []string{"Cache-Control: max-age=60", "Surrogate-Control: max-age=30"}, false, true},
		{"targeted", []string{"Cache-Control: max-age=60", "strata-cache-control: max-age=30"}, false, true},
		{"many lines", []string{"Vary: A", "Vary: B", "Vary: C", "Vary: D", "Vary: E", "Cache-Control: max-age=60"}, true, true},
		{"trailers", []string{"Cache-Control: max-age=60", "Trailer: X-Sum", "Transfer-Encoding: chunked"}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var si StoreInfo
			StoreDecision(&si, &rp, 200, testResponse(t, "200 OK", tc.headers...), testNow, &o)
			if si.MayVary != tc.vary || si.MaySurrogate != tc.surrogateish {
				t.Errorf("MayVary %v MaySurrogate %v, want %v %v", si.MayVary, si.MaySurrogate, tc.vary, tc.surrogateish)
			}
		})
	}
}

func TestPolicyOptions(t *testing.T) {
	d := defaultPolicyOptions()
	if !d.Shared || d.HeuristicFraction != 0.1 || d.HeuristicMax != 24*time.Hour || d.DefaultTTL != 0 || d.StoreSetCookie || d.Grace != 0 {
		t.Errorf("defaults: %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	bad := PolicyOptions{HeuristicFraction: 2, HeuristicMax: -1, DefaultTTL: -1, Grace: -1}
	err := bad.Validate()
	if !errors.Is(err, ErrPolicyOptions) {
		t.Fatalf("Validate = %v, want ErrPolicyOptions", err)
	}
	for _, want := range []string{"heuristic_fraction", "heuristic_max", "default_ttl", "grace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not name %s", err, want)
		}
	}
}

func TestPolicyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	req := testRequest(t, "GET", "/x", "Cache-Control: max-age=5", "Cache-Control: no-transform", "Pragma: no-cache", "Authorization: x")
	h := testResponse(t, "200 OK", "Date: "+testDate(0), "Cache-Control: public, max-age=60", "Cache-Control: stale-if-error=5",
		"Expires: "+testDate(60), "Last-Modified: "+testDate(-60), `ETag: "abc"`, "Age: 4", "Vary: Accept-Encoding")
	o := defaultPolicyOptions()
	var rp RequestPolicy
	var si StoreInfo
	if n := testing.AllocsPerRun(100, func() { ParseRequest(&rp, &req.Header) }); n != 0 {
		t.Errorf("ParseRequest allocates %v times per run, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { StoreDecision(&si, &rp, 200, h, testNow, &o) }); n != 0 {
		t.Errorf("StoreDecision allocates %v times per run, want 0", n)
	}
	if !si.Store {
		t.Fatalf("test response not stored: %s", si.Reason)
	}
	age := CurrentAge(si.Age, si.Date, testNow, testNow, testNow)
	if n := testing.AllocsPerRun(100, func() { Evaluate(&si.FreshnessInfo, age, &rp, &o) }); n != 0 {
		t.Errorf("Evaluate allocates %v times per run, want 0", n)
	}
}

func TestInvalidates(t *testing.T) {
	tests := []struct {
		method string
		status int
		want   bool
	}{
		{"POST", 200, true}, {"PUT", 201, true}, {"DELETE", 204, true}, {"PATCH", 303, true}, {"PURGE", 200, true},
		{"POST", 404, false}, {"POST", 500, false}, {"POST", 100, false},
		{"GET", 200, false}, {"HEAD", 200, false}, {"OPTIONS", 200, false}, {"TRACE", 200, false},
	}
	for _, tt := range tests {
		if got := Invalidates([]byte(tt.method), tt.status); got != tt.want {
			t.Errorf("RFC 9111 §4.4 Invalidates(%s, %d) = %v, want %v", tt.method, tt.status, got, tt.want)
		}
	}
}
