package proxy

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
		ParseCacheControl(&rp.CC, []byte(cc))
		rp.Cacheable = true
		return rp
	}
	grace := DefaultPolicyOptions()
	grace.Grace = 100 * s
	def := DefaultPolicyOptions()
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
