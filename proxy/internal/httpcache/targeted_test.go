package httpcache

import (
	"strings"
	"testing"
	"time"
)

func TestSFDictionary(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		want string // "key=kind:val" joined with " "
	}{
		{"", true, ""},
		{"a", true, "a=1:?1"},
		{"max-age=60", true, "max-age=2:60"},
		{"a=1, b, c=?0", true, "a=2:1 b=1:?1 c=1:?0"},
		{"a=1,b=2", true, "a=2:1 b=2:2"},
		{"a=1 ,\tb=2", true, "a=2:1 b=2:2"},
		{`a="x, y", b=tok/en:1`, true, `a=4:x, y b=5:tok/en:1`},
		{`a="q\"d\\"`, true, `a=4:q\"d\\`},
		{"a=:aGk=:", true, "a=6:aGk="},
		{"a=-12.345", true, "a=3:-12.345"},
		{"a=(1 \"b\" c);p=1, d", true, "a=7: d=1:?1"},
		{"a=();x, b=( )", true, "a=7: b=7:"},
		{"a;p=1;q, b=2;r=\"s\"", true, "a=1:?1 b=2:2"},
		{"*k.x_y-z=1", true, "*k.x_y-z=2:1"},
		{"a=999999999999999", true, "a=2:999999999999999"},
		// Failures: the whole field is ignored (RFC 9213 §2.2).
		{"a=1,", false, ""},
		{",a", false, ""},
		{"a=1,,b", false, ""},
		{"A=1", false, ""},
		{"max-age =60", false, ""},
		{"1a=1", false, ""},
		{"a=1000000000000000", false, ""},
		{"a=1.", false, ""},
		{"a=1.2345", false, ""},
		{"a=1234567890123.1", false, ""},
		{"a=-", false, ""},
		{"a=-.5", false, ""},
		{`a="unterminated`, false, ""},
		{`a="bad\escape"`, false, ""},
		{"a=\"ctl\x01\"", false, ""},
		{"a=?2", false, ""},
		{"a=?", false, ""},
		{"a=:no-b64!:", false, ""},
		{"a=:open", false, ""},
		{"a=(1 2", false, ""},
		{"a=(1,2)", false, ""},
		{"a=(1)x", false, ""},
		{"a=@1659578233", false, ""}, // RFC 9651 Date: not RFC 8941
		{"a=%\"x\"", false, ""},
		{"a;P=1", false, ""},
		{"a b", false, ""},
		{"a=1;", false, ""},
		{"a=", false, ""},
	}
	for _, tt := range tests {
		var got []string
		ok := sfDictionary([]byte(tt.in), func(m sfMember) {
			got = append(got, string(m.key)+"="+string(rune('0'+m.kind))+":"+string(m.val))
		})
		if ok != tt.ok || (ok && strings.Join(got, " ") != tt.want) {
			t.Errorf("%q: ok %v %q, want %v %q", tt.in, ok, strings.Join(got, " "), tt.ok, tt.want)
		}
	}
}

func TestParseTargeted(t *testing.T) {
	tests := []struct {
		name  string
		lines []string
		ok    bool
		want  CacheControl
	}{
		{"absent", nil, false, ccWant(nil)},
		{"empty: ignored", []string{""}, false, ccWant(nil)},
		{"max-age", []string{"max-age=600"}, true, ccWant(func(c *CacheControl) { c.MaxAge = 600 })},
		{"the five MUST directives", []string{"max-age=5, must-revalidate, no-store, no-cache, private"}, true, ccWant(func(c *CacheControl) {
			c.MaxAge, c.MustRevalidate, c.NoStore, c.NoCache, c.Private = 5, true, true, true, true
		})},
		{"the SHOULD ones", []string{"s-maxage=9, proxy-revalidate, public, must-understand, immutable, no-transform, stale-while-revalidate=3, stale-if-error=4"}, true, ccWant(func(c *CacheControl) {
			c.SMaxAge, c.ProxyRevalidate, c.Public, c.MustUnderstand, c.Immutable, c.NoTransform = 9, true, true, true, true, true
			c.StaleWhileRevalidate, c.StaleIfError = 3, 4
		})},
		{"lines join", []string{"max-age=5", "no-cache"}, true, ccWant(func(c *CacheControl) { c.MaxAge, c.NoCache = 5, true })},
		{"one bad line spoils the field", []string{"max-age=5", "no-cache,"}, false, ccWant(nil)},
		{"an empty line among others", []string{"max-age=5", ""}, false, ccWant(nil)},
		{"string max-age is invalid: stale", []string{`max-age="60"`}, true, ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"decimal max-age: stale", []string{"max-age=6.5"}, true, ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"negative max-age: stale", []string{"max-age=-1"}, true, ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"boolean max-age: stale", []string{"max-age"}, true, ccWant(func(c *CacheControl) { c.MaxAge = 0 })},
		{"huge max-age capped", []string{"max-age=999999999999999"}, true, ccWant(func(c *CacheControl) { c.MaxAge = deltaMax })},
		{"last wins", []string{"max-age=5, max-age=7"}, true, ccWant(func(c *CacheControl) { c.MaxAge = 7 })},
		{"?0 means absent", []string{"no-store=?0, max-age=5"}, true, ccWant(func(c *CacheControl) { c.MaxAge = 5 })},
		{"last ?0 wins", []string{"no-store, no-store=?0"}, true, ccWant(nil)},
		{"field lists read unqualified", []string{`no-cache="set-cookie", private=("a" "b")`}, true, ccWant(func(c *CacheControl) { c.NoCache, c.Private = true, true })},
		{"parameters ignored", []string{"max-age=60;x=1, public;y"}, true, ccWant(func(c *CacheControl) { c.MaxAge, c.Public = 60, true })},
		{"request and unknown directives ignored, field still valid", []string{"max-stale=5, only-if-cached, foo=bar"}, true, ccWant(nil)},
		{"Cache-Control syntax that SF refuses", []string{"Max-Age=60"}, false, ccWant(nil)},
		{"no space before =", []string{"max-age = 60"}, false, ccWant(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cc CacheControl
			cc.reset()
			lines := make([][]byte, len(tt.lines))
			for i, l := range tt.lines {
				lines[i] = []byte(l)
			}
			ok := parseTargeted(&cc, lines)
			if ok != tt.ok || cc != tt.want {
				t.Errorf("ok %v %+v, want %v %+v", ok, cc, tt.ok, tt.want)
			}
		})
	}
}

// TestTargetedStoreDecision: RFC 9213 §2.1's choice of field and its
// effect on storing and freshness.
func TestTargetedStoreDecision(t *testing.T) {
	date := "Date: " + testDate(0)
	tests := []struct {
		name     string
		headers  []string
		req      []string
		ignore   bool
		targeted Targeted
		store    bool
		reason   string
		lifetime time.Duration
	}{
		{"CDN-Cache-Control replaces no-store", []string{"Cache-Control: no-store", "CDN-Cache-Control: max-age=600"}, nil, false, TargetedCDN, true, "", 600 * time.Second},
		{"CDN-Cache-Control no-store replaces max-age", []string{"Cache-Control: max-age=600", "CDN-Cache-Control: no-store"}, nil, false, TargetedCDN, false, ReasonNoStore, 0},
		{"Expires ignored under CDN-Cache-Control", []string{date, "Expires: " + testDate(3600), "CDN-Cache-Control: public", `ETag: "e"`}, nil, false, TargetedCDN, true, "", 0},
		{"CDN-Cache-Control private", []string{"Cache-Control: public, max-age=60", "CDN-Cache-Control: private"}, nil, false, TargetedCDN, false, ReasonPrivate, 0},
		{"CDN-Cache-Control no-cache: stored, always validated", []string{"Cache-Control: max-age=60", "CDN-Cache-Control: no-cache", `ETag: "e"`}, nil, false, TargetedCDN, true, "", 0},
		{"CDN-Cache-Control must-revalidate", []string{"CDN-Cache-Control: max-age=5, must-revalidate"}, nil, false, TargetedCDN, true, "", 5 * time.Second},
		{"CDN-Cache-Control s-maxage applies (shared)", []string{"CDN-Cache-Control: max-age=5, s-maxage=50"}, nil, false, TargetedCDN, true, "", 50 * time.Second},
		{"invalid CDN-Cache-Control: Cache-Control applies", []string{"Cache-Control: max-age=60", "CDN-Cache-Control: max-age=600,"}, nil, false, TargetedNone, true, "", time.Minute},
		{"empty CDN-Cache-Control: Cache-Control applies", []string{"Cache-Control: no-store", "CDN-Cache-Control: "}, nil, false, TargetedNone, false, ReasonNoStore, 0},
		{"strata's field beats both", []string{"Cache-Control: no-store", "CDN-Cache-Control: no-store", "Strata-Cache-Control: max-age=30"}, nil, false, TargetedOwn, true, "", 30 * time.Second},
		{"strata's field no-store beats both", []string{"Cache-Control: max-age=60", "CDN-Cache-Control: max-age=60", "Strata-Cache-Control: no-store"}, nil, false, TargetedOwn, false, ReasonNoStore, 0},
		{"invalid strata field: CDN-Cache-Control next", []string{"CDN-Cache-Control: max-age=60", "Strata-Cache-Control: max-age=\"x"}, nil, false, TargetedCDN, true, "", time.Minute},
		{"CDN-Cache-Control off: passed over", []string{"Cache-Control: no-store", "CDN-Cache-Control: max-age=600"}, nil, true, TargetedNone, false, ReasonNoStore, 0},
		{"CDN-Cache-Control off: strata's still read", []string{"Cache-Control: no-store", "Strata-Cache-Control: max-age=6"}, nil, true, TargetedOwn, true, "", 6 * time.Second},
		{"another cache's field changes nothing", []string{"Cache-Control: max-age=60", "Other-CDN-Cache-Control: no-store"}, nil, false, TargetedNone, true, "", time.Minute},
		{"request no-store still wins", []string{"CDN-Cache-Control: max-age=60"}, []string{"Cache-Control: no-store"}, false, TargetedCDN, false, ReasonNoStore, time.Minute},
		{"Authorization still needs consent", []string{"CDN-Cache-Control: max-age=60"}, []string{"Authorization: Basic eDp5"}, false, TargetedCDN, false, ReasonAuthorization, time.Minute},
		{"Authorization consent from the targeted field", []string{"Cache-Control: private", "CDN-Cache-Control: max-age=60, public"}, []string{"Authorization: Basic eDp5"}, false, TargetedCDN, true, "", time.Minute},
		{"Surrogate-Control no-store still refuses", []string{"CDN-Cache-Control: max-age=60", "Surrogate-Control: no-store"}, nil, false, TargetedCDN, false, ReasonNoStore, time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultPolicyOptions()
			o.IgnoreCDNCacheControl = tt.ignore
			si := testStoreInfo(t, &o, tt.req, tt.headers)
			if si.Targeted != tt.targeted || si.Store != tt.store || si.Reason != tt.reason || si.Lifetime != tt.lifetime {
				t.Errorf("Targeted %d Store %v %q Lifetime %v, want %d %v %q %v", si.Targeted, si.Store, si.Reason, si.Lifetime,
					tt.targeted, tt.store, tt.reason, tt.lifetime)
			}
			if tt.targeted != TargetedNone && !si.Expires.IsZero() {
				t.Errorf("Expires %v read under a targeted field", si.Expires)
			}
		})
	}
}

// testStoreInfo runs StoreDecision on a 200 with headers answering a GET
// with req's headers.
func testStoreInfo(t *testing.T, o *PolicyOptions, req, headers []string) StoreInfo {
	t.Helper()
	r := testRequest(t, "GET", "/", req...)
	var rp RequestPolicy
	ParseRequest(&rp, &r.Header)
	h := testResponse(t, "200 OK", headers...)
	var si StoreInfo
	StoreDecision(&si, &rp, 200, h, testNow, o)
	return si
}

func TestTargetedFieldValidate(t *testing.T) {
	for name, ok := range map[string]bool{"Strata-Cache-Control": true, "Edge-7-Cache-Control": true, "cache-control": false,
		"CDN-Cache-Control": false, "a b": false, "x:": false} {
		o := defaultPolicyOptions()
		o.TargetedField = name
		if err := o.Validate(); (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "targeted_cache_control")) {
			t.Errorf("field %q: %v", name, err)
		}
	}
}

func TestTargetedAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	h := testResponse(t, "200 OK", "Cache-Control: no-store", `CDN-Cache-Control: max-age=60, stale-if-error=30;x="y", private=("a")`)
	o := defaultPolicyOptions()
	req := testRequest(t, "GET", "/")
	var rp RequestPolicy
	ParseRequest(&rp, &req.Header)
	var si StoreInfo
	if n := testing.AllocsPerRun(100, func() { StoreDecision(&si, &rp, 200, h, testNow, &o) }); n != 0 {
		t.Errorf("StoreDecision with CDN-Cache-Control allocates %v times per run, want 0", n)
	}
	if si.Targeted != TargetedCDN {
		t.Fatalf("CDN-Cache-Control not used: %+v", si.CC)
	}
}

// FuzzTargetedCacheControl: no panics; a valid field stays valid and
// means the same when repeated (a Dictionary's later members win, and
// they are the same); split over two lines at a top-level comma it means
// the same as joined; values stay in range.
func FuzzTargetedCacheControl(f *testing.F) {
	for _, s := range []string{"max-age=60", "no-store, max-age=5", `private=("a" "b"), no-cache="x"`, "a=1.5;p=?1",
		"s-maxage=1;x, public", ":", "a=:aGk=:", "max-age=-0", `a="\\"`, "max-age=9999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var cc CacheControl
		cc.reset()
		ok := parseTargeted(&cc, [][]byte{[]byte(s)})
		for _, d := range []int64{cc.MaxAge, cc.SMaxAge, cc.StaleWhileRevalidate, cc.StaleIfError} {
			if d < -1 || d > deltaMax {
				t.Fatalf("%q: delta %d out of range: %+v", s, d, cc)
			}
		}
		if !ok {
			if cc != ccWant(nil) {
				t.Fatalf("%q: refused but left %+v", s, cc)
			}
			return
		}
		var twice CacheControl
		twice.reset()
		if !parseTargeted(&twice, [][]byte{[]byte(s + ", " + s)}) || twice != cc {
			t.Fatalf("%q repeated: %+v, want %+v", s, twice, cc)
		}
		if i := strings.IndexByte(s, ','); i > 0 && !strings.ContainsAny(s, `"()`) {
			var split CacheControl
			split.reset()
			if !parseTargeted(&split, [][]byte{[]byte(s[:i]), []byte(s[i+1:])}) || split != cc {
				t.Fatalf("%q split at %d: %+v, want %+v", s, i, split, cc)
			}
		}
	})
}
