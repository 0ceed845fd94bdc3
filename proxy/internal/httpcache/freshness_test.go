package httpcache

import (
	"testing"
	"time"
)

func TestEvaluate(t *testing.T) {
	const s = time.Second
	none := time.Duration(-1)
	fi := func(life time.Duration, mod func(*FreshnessInfo)) FreshnessInfo {
		f := FreshnessInfo{Lifetime: life, StaleWhileRevalidate: none, StaleIfError: none}
		if mod != nil {
			mod(&f)
		}
		return f
	}
	req := func(cc string) RequestPolicy {
		var rp RequestPolicy
		parseCacheControl(&rp.CC, []byte(cc))
		rp.Cacheable = true
		return rp
	}
	grace := defaultPolicyOptions()
	grace.Grace = 100 * s
	def := defaultPolicyOptions()
	tests := []struct {
		name    string
		fi      FreshnessInfo
		age     time.Duration
		req     string
		o       PolicyOptions
		want    Freshness
		onError bool
	}{
		{"§4.2 fresh", fi(60*s, nil), 10 * s, "", def, Fresh, true},
		{"§4.2 age == lifetime is stale", fi(60*s, nil), 60 * s, "", def, MustValidate, false},
		{"§4.2 stale", fi(60*s, nil), 61 * s, "", def, MustValidate, false},
		{"§5.2.2.4 response no-cache, fresh", fi(60*s, func(f *FreshnessInfo) { f.NoCache = true }), 0, "", def, MustValidate, false},
		{"§5.2.2.4 no-cache forbids stale-if-error", fi(60*s, func(f *FreshnessInfo) { f.NoCache = true; f.StaleIfError = time.Hour }), 70 * s, "", def, MustValidate, false},
		{"§5.2.1.4 request no-cache", fi(60*s, nil), 0, "no-cache", def, MustValidate, false},
		{"§5.2.1.1 request max-age exceeded", fi(3600*s, nil), 1800 * s, "max-age=600", def, MustValidate, true},
		{"§5.2.1.1 request max-age met", fi(3600*s, nil), 600 * s, "max-age=600", def, Fresh, true},
		{"§5.2.1.1 request max-age=0", fi(3600*s, nil), 1, "max-age=0", def, MustValidate, true},
		{"§5.2.1.3 min-fresh not met", fi(1500*s, nil), 1000 * s, "min-fresh=1000", def, MustValidate, true},
		{"§5.2.1.3 min-fresh met", fi(1500*s, nil), 400 * s, "min-fresh=1000", def, Fresh, true},
		{"§5.2.1.2 max-stale accepts", fi(1*s, nil), 500 * s, "max-stale=1000", def, StaleServable, false},
		{"§5.2.1.2 max-stale too small", fi(1*s, nil), 1500 * s, "max-stale=1000", def, MustValidate, false},
		{"§5.2.1.2 max-stale without value", fi(1*s, nil), 1e6 * s, "max-stale", def, StaleServable, false},
		{"§5.2.2.2 must-revalidate beats max-stale", fi(1*s, func(f *FreshnessInfo) { f.MustRevalidate = true }), 5 * s, "max-stale", def, MustValidate, false},
		{"§5.2.2.2 must-revalidate while fresh", fi(10*s, func(f *FreshnessInfo) { f.MustRevalidate = true }), 5 * s, "", def, Fresh, true},
		{"RFC 5861 §3 within stale-while-revalidate", fi(10*s, func(f *FreshnessInfo) { f.StaleWhileRevalidate = 30 * s }), 35 * s, "", def, StaleRevalidate, false},
		{"RFC 5861 §3 past stale-while-revalidate", fi(10*s, func(f *FreshnessInfo) { f.StaleWhileRevalidate = 30 * s }), 41 * s, "", def, MustValidate, false},
		{"RFC 5861 §3 swr=0 opens nothing", fi(10*s, func(f *FreshnessInfo) { f.StaleWhileRevalidate = 0 }), 10 * s, "", def, MustValidate, false},
		{"RFC 5861 §3 swr forbidden by must-revalidate", fi(10*s, func(f *FreshnessInfo) { f.StaleWhileRevalidate = 30 * s; f.MustRevalidate = true }), 15 * s, "", def, MustValidate, false},
		{"RFC 5861 §3 swr forbidden by request no-cache", fi(10*s, func(f *FreshnessInfo) { f.StaleWhileRevalidate = 30 * s }), 15 * s, "no-cache", def, MustValidate, false},
		{"RFC 5861 §4 within stale-if-error", fi(10*s, func(f *FreshnessInfo) { f.StaleIfError = 60 * s }), 50 * s, "", def, MustValidate, true},
		{"RFC 5861 §4 past stale-if-error", fi(10*s, func(f *FreshnessInfo) { f.StaleIfError = 60 * s }), 71 * s, "", def, MustValidate, false},
		{"RFC 5861 §4 request stale-if-error", fi(10*s, nil), 50 * s, "stale-if-error=60", def, MustValidate, true},
		{"RFC 5861 §4 stale-if-error vs must-revalidate", fi(10*s, func(f *FreshnessInfo) { f.StaleIfError = 60 * s; f.MustRevalidate = true }), 20 * s, "", def, MustValidate, false},
		{"grace as swr and sie", fi(10*s, nil), 50 * s, "", grace, StaleRevalidate, true},
		{"grace past its end", fi(10*s, nil), 111 * s, "", grace, MustValidate, false},
		{"grace not over an origin swr", fi(10*s, func(f *FreshnessInfo) { f.StaleWhileRevalidate = 5 * s }), 50 * s, "", grace, MustValidate, false},
		{"grace not over an origin sie", fi(10*s, func(f *FreshnessInfo) { f.StaleIfError = 5 * s }), 50 * s, "", grace, MustValidate, false},
		{"grace not over must-revalidate", fi(10*s, func(f *FreshnessInfo) { f.MustRevalidate = true }), 50 * s, "", grace, MustValidate, false},
		{"grace not over no-cache", fi(10*s, func(f *FreshnessInfo) { f.NoCache = true }), 50 * s, "", grace, MustValidate, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rp := req(tt.req)
			v := Evaluate(&tt.fi, tt.age, &rp, &tt.o)
			if v.Freshness != tt.want || v.ServeOnError != tt.onError {
				t.Errorf("Evaluate = %v onError=%v, want %v onError=%v", v.Freshness, v.ServeOnError, tt.want, tt.onError)
			}
			if v.Staleness != tt.age-tt.fi.Lifetime {
				t.Errorf("Staleness = %v", v.Staleness)
			}
		})
	}
}

func TestFreshnessString(t *testing.T) {
	for f, want := range map[Freshness]string{Fresh: "fresh", StaleServable: "stale-servable",
		StaleRevalidate: "stale-while-revalidate", MustValidate: "must-validate", 99: "invalid"} {
		if f.String() != want {
			t.Errorf("%d.String() = %q, want %q", f, f.String(), want)
		}
	}
}

// TestScenarios runs the whole path a hit takes: StoreDecision on the
// origin response, CurrentAge at serve time, Evaluate with the new request.
// Times are seconds relative to testNow, when the response arrived.
func TestScenarios(t *testing.T) {
	tests := []struct {
		name    string
		resp    []string
		delay   int // seconds between request sent and response received
		at      int // serve time
		req     []string
		want    Freshness
		onError bool
	}{
		{"§4.2.3 Age counts: max-age=3600, Age 7200 is stale", []string{"Date: " + testDate(0), "Cache-Control: max-age=3600", `ETag: "a"`, "Age: 7200"}, 0, 0, nil, MustValidate, false},
		{"§4.2.3 Age counts with Expires", []string{"Date: " + testDate(0), "Expires: " + testDate(3600), `ETag: "a"`, "Age: 7200"}, 0, 0, nil, MustValidate, false},
		{"§4.2.3 Expires, fast Date: lifetime from Date", []string{"Date: " + testDate(10), "Expires: " + testDate(3610)}, 0, 3000, nil, Fresh, true},
		{"§4.2.3 slow Date adds apparent age", []string{"Date: " + testDate(-3600), "Cache-Control: max-age=5400"}, 0, 1799, nil, Fresh, true},
		{"§4.2.3 slow Date, later stale", []string{"Date: " + testDate(-3600), "Cache-Control: max-age=5400", `ETag: "a"`}, 0, 1801, nil, MustValidate, false},
		{"§4.2.3 response delay counts", []string{"Date: " + testDate(0), "Cache-Control: max-age=10", `ETag: "a"`, "Age: 5"}, 6, 0, nil, MustValidate, false},
		{"§4.2.2 heuristic lifetime", []string{"Date: " + testDate(0), "Last-Modified: " + testDate(-36000)}, 0, 3599, nil, Fresh, true},
		{"§4.2.2 heuristic lifetime ends", []string{"Date: " + testDate(0), "Last-Modified: " + testDate(-36000)}, 0, 3600, nil, MustValidate, false},
		{"RFC 5861 swr after max-age", []string{"Date: " + testDate(0), "Cache-Control: max-age=1, stale-while-revalidate=60"}, 0, 30, nil, StaleRevalidate, false},
		{"RFC 5861 sie after max-age", []string{"Date: " + testDate(0), "Cache-Control: max-age=1, stale-if-error=60"}, 0, 30, nil, MustValidate, true},
		{"§5.2.2.10 s-maxage forbids stale-if-error", []string{"Date: " + testDate(0), "Cache-Control: s-maxage=1, stale-if-error=60"}, 0, 30, nil, MustValidate, false},
		{"§5.2.1.2 max-stale with Age", []string{"Date: " + testDate(0), "Cache-Control: max-age=1500", "Age: 2000"}, 0, 0, []string{"Cache-Control: max-stale=1000"}, StaleServable, false},
		{"§5.2.1.3 min-fresh with Age", []string{"Date: " + testDate(0), "Cache-Control: max-age=1500", "Age: 1000"}, 0, 0, []string{"Cache-Control: min-fresh=1000"}, MustValidate, true},
		{"§5.4 Pragma no-cache", []string{"Date: " + testDate(0), "Cache-Control: max-age=1500"}, 0, 0, []string{"Pragma: no-cache"}, MustValidate, false},
	}
	o := defaultPolicyOptions()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			origin := testRequest(t, "GET", "/")
			var rp RequestPolicy
			ParseRequest(&rp, &origin.Header)
			h := testResponse(t, "200 OK", tt.resp...)
			var si StoreInfo
			StoreDecision(&si, &rp, 200, h, testNow, &o)
			if !si.Store {
				t.Fatalf("not stored: %s", si.Reason)
			}
			reqTime := testNow.Add(-time.Duration(tt.delay) * time.Second)
			age := CurrentAge(si.Age, si.Date, reqTime, testNow, testNow.Add(time.Duration(tt.at)*time.Second))
			client := testRequest(t, "GET", "/", tt.req...)
			ParseRequest(&rp, &client.Header)
			v := Evaluate(&si.FreshnessInfo, age, &rp, &o)
			if v.Freshness != tt.want || v.ServeOnError != tt.onError {
				t.Errorf("age %v lifetime %v: got %v onError=%v, want %v onError=%v",
					age, si.Lifetime, v.Freshness, v.ServeOnError, tt.want, tt.onError)
			}
		})
	}
}
