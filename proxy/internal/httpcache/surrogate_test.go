package httpcache

import (
	"strings"
	"testing"
	"time"
)

// TestSurrogateControlParse: the directives of Surrogate-Control (W3C Edge
// Architecture Specification 1.0 §2.2) that apply to the token "strata".
func TestSurrogateControlParse(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		maxAge  int64
		noStore bool
	}{
		{"absent", nil, -1, false},
		{"max-age", []string{"max-age=3600"}, 3600, false},
		{"case-insensitive name", []string{"MaX-aGe=60"}, 60, false},
		{"after an extension", []string{"foobar, max-age=3600"}, 3600, false},
		{"targeted at us", []string{"max-age=3600;strata"}, 3600, false},
		{"token case-insensitive", []string{"max-age=3600;Strata"}, 3600, false},
		{"targeted at another device: ignored", []string{"max-age=3600;not-for-you"}, -1, false},
		{"ours beats untargeted, either order", []string{"max-age=5, max-age=60;strata"}, 60, false},
		{"ours beats untargeted, reversed", []string{"max-age=60;strata, max-age=5"}, 60, false},
		{"another device's does not beat untargeted", []string{"max-age=5, max-age=60;cdn"}, 5, false},
		{"over 2^31 capped (RFC 9111 §1.2.2)", []string{"max-age=99999999999"}, 1 << 31, false},
		{"freshness extension ignored", []string{"max-age=30+60"}, 30, false},
		{"invalid value is stale", []string{"max-age=abc"}, 0, false},
		{"no value is stale", []string{"max-age"}, 0, false},
		{"space before = : not the directive", []string{"max-age =100"}, -1, false},
		{"conflicting values are stale", []string{"max-age=60", "max-age=120"}, 0, false},
		{"equal duplicates agree", []string{"max-age=60, max-age=60"}, 60, false},
		{"no-store", []string{"no-store"}, -1, true},
		{"no-store targeted at us", []string{"no-store;strata"}, -1, true},
		{"no-store for another device", []string{"no-store;cdn"}, -1, false},
		{"no-store-remote read as no-store", []string{"no-store-remote"}, -1, true},
		{"content and max-age", []string{`content="ESI/1.0";strata, max-age=60`}, 60, false},
		{"junk", []string{",,;;=,"}, -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sc SurrogateControl
			sc.reset()
			for _, l := range tt.lines {
				sc.add([]byte(l), "strata")
			}
			if sc.MaxAge != tt.maxAge || sc.NoStore != tt.noStore {
				t.Errorf("%q: MaxAge %d NoStore %v, want %d %v", tt.lines, sc.MaxAge, sc.NoStore, tt.maxAge, tt.noStore)
			}
		})
	}
	var sc SurrogateControl
	v := []byte("foo, max-age=60;strata, no-store;cdn")
	if n := testing.AllocsPerRun(100, func() { sc.reset(); sc.add(v, "strata") }); n != 0 {
		t.Errorf("Add allocates %v times", n)
	}
}

// TestSurrogateStoreDecision: the precedence rules of surrogate.go.
func TestSurrogateStoreDecision(t *testing.T) {
	date := "Date: " + testDate(0)
	tests := []struct {
		name     string
		headers  []string
		req      []string
		ignore   bool
		store    bool
		reason   string
		lifetime time.Duration
	}{
		{"max-age alone makes it storable", []string{"Surrogate-Control: max-age=60"}, nil, false, true, "", time.Minute},
		{"beats a longer Cache-Control max-age", []string{"Cache-Control: max-age=3600", "Surrogate-Control: max-age=1"}, nil, false, true, "", time.Second},
		{"beats a shorter s-maxage", []string{"Cache-Control: s-maxage=1", "Surrogate-Control: max-age=3600"}, nil, false, true, "", time.Hour},
		{"beats a future Expires", []string{date, "Expires: " + testDate(3600), "Surrogate-Control: max-age=0", "ETag: \"x\""}, nil, false, true, "", 0},
		{"beats a past Expires", []string{date, "Expires: " + testDate(-3600), "Surrogate-Control: max-age=60"}, nil, false, true, "", time.Minute},
		{"max-age=0 without validator: never reusable", []string{"Surrogate-Control: max-age=0"}, nil, false, false, ReasonNoValidator, 0},
		{"sets aside Cache-Control no-store", []string{"Cache-Control: no-store", "Surrogate-Control: max-age=60;strata"}, nil, false, true, "", time.Minute},
		{"sets aside no-cache", []string{"Cache-Control: no-cache", "Surrogate-Control: max-age=60"}, nil, false, true, "", time.Minute},
		{"sets aside private", []string{"Cache-Control: private", "Surrogate-Control: max-age=60"}, nil, false, true, "", time.Minute},
		{"no-store beats Cache-Control and Expires", []string{date, "Cache-Control: max-age=10000", "Expires: " + testDate(3600), "Surrogate-Control: no-store"}, nil, false, false, ReasonNoStore, time.Duration(10000) * time.Second},
		{"no-store beats its own max-age", []string{"Surrogate-Control: no-store, max-age=60"}, nil, false, false, ReasonNoStore, time.Minute},
		{"another device's max-age: Cache-Control rules", []string{"Cache-Control: no-store", "Surrogate-Control: max-age=60;cdn"}, nil, false, false, ReasonNoStore, 0},
		{"request no-store still wins", []string{"Surrogate-Control: max-age=60"}, []string{"Cache-Control: no-store"}, false, false, ReasonNoStore, time.Minute},
		{"Authorization still needs Cache-Control's consent (RFC 9111 §3.5)", []string{"Surrogate-Control: max-age=60"}, []string{"Authorization: Basic eDp5"}, false, false, ReasonAuthorization, time.Minute},
		{"Set-Cookie still refused", []string{"Surrogate-Control: max-age=60", "Set-Cookie: a=b"}, nil, false, false, ReasonSetCookie, time.Minute},
		{"ignored when turned off", []string{"Cache-Control: no-store", "Surrogate-Control: max-age=60"}, nil, true, false, ReasonNoStore, 0},
		{"off: its no-store ignored too", []string{"Cache-Control: max-age=60", "Surrogate-Control: no-store"}, nil, true, true, "", time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultPolicyOptions()
			o.IgnoreSurrogateControl = tt.ignore
			si := testStoreInfo(t, &o, tt.req, tt.headers)
			if si.Store != tt.store || si.Reason != tt.reason || si.Lifetime != tt.lifetime {
				t.Errorf("Store %v %q Lifetime %v, want %v %q %v", si.Store, si.Reason, si.Lifetime, tt.store, tt.reason, tt.lifetime)
			}
		})
	}
}

func TestSurrogateTokenValidate(t *testing.T) {
	for tok, ok := range map[string]bool{"strata": true, "edge-1.example": true, "a b": false, `x"`: false, "a;b": false} {
		o := defaultPolicyOptions()
		o.SurrogateToken = tok
		if err := o.Validate(); (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "surrogate_token")) {
			t.Errorf("token %q: %v", tok, err)
		}
	}
}

func FuzzSurrogateControl(f *testing.F) {
	for _, s := range []string{"max-age=60", "no-store;strata", "max-age=1;cdn, max-age=5", `content="ESI/1.0";x`, "max-age=30+60", ";;,=", "max-age=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var sc SurrogateControl
		sc.reset()
		sc.add([]byte(s), "strata")
		if sc.MaxAge < -1 || sc.MaxAge > deltaMax {
			t.Fatalf("%q: MaxAge %d out of range", s, sc.MaxAge)
		}
		// Directives for another device never change the outcome.
		var other SurrogateControl
		other.reset()
		other.add([]byte(s+", max-age=7;someone-else, no-store;someone-else"), "strata")
		if !strings.Contains(s, "\"") && (other.MaxAge != sc.MaxAge || other.NoStore != sc.NoStore) {
			t.Fatalf("%q: a directive for another device changed %+v to %+v", s, sc, other)
		}
	})
}
