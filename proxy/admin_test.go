package proxy

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/valyala/fasthttp"
)

func adminDo(a *Admin, method, uri, auth string) (int, string) {
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(uri)
	if auth != "" {
		ctx.Request.Header.Set("Authorization", auth)
	}
	a.Handler(&ctx)
	return ctx.Response.StatusCode(), string(ctx.Response.Body())
}

func TestPurgeAndAdmin(t *testing.T) {
	p := newPair(t, cacheable("purge me"), func(o *Options) { o.PurgeToken = "s3cret" })
	p.get("/p")
	waitFor(t, func() bool { return p.srv.nfills.Load() == 0 }) // the fill committed and left
	a := NewAdmin(p.srv, p.reg)
	u := "/purge?url=http://example.com/p"
	for _, tc := range []struct {
		method, auth string
		want         int
	}{
		{"GET", "Bearer s3cret", 405},
		{"POST", "", 401},
		{"POST", "Bearer wrong", 401},
		{"POST", "Bearer s3cret", 200},
		{"POST", "Bearer s3cret", 404}, // gone
	} {
		if code, body := adminDo(a, tc.method, u, tc.auth); code != tc.want {
			t.Errorf("%s %q: %d %q, want %d", tc.method, tc.auth, code, body, tc.want)
		}
	}
	r := p.get("/p")
	expectHeader(t, r, "Cache-Status", "strata; fwd=uri-miss; stored")
	if code, _ := adminDo(a, "POST", "/purge?url=ftp://x/", "Bearer s3cret"); code != 400 {
		t.Errorf("bad URL: %d", code)
	}
	if _, err := p.srv.purge("::"); !errors.Is(err, ErrPurgeURL) {
		t.Errorf("purge(::) = %v", err)
	}
	if code, _ := adminDo(a, "GET", "/healthz", ""); code != 200 {
		t.Errorf("healthz %d", code)
	}
	if code, _ := adminDo(a, "GET", "/readyz", ""); code != 503 {
		t.Errorf("readyz before SetReady: %d", code)
	}
	a.SetReady(true)
	if code, _ := adminDo(a, "GET", "/readyz", ""); code != 200 {
		t.Errorf("readyz: %d", code)
	}
	code, body := adminDo(a, "GET", "/metrics", "")
	if code != 200 || !strings.Contains(body, `strata_requests_total{cache_status="miss"} 2`) {
		t.Errorf("metrics %d:\n%s", code, body)
	}
}

func TestPurgeDisabledWithoutToken(t *testing.T) {
	p := newPair(t, cacheable("x"), nil)
	a := NewAdmin(p.srv, nil)
	if code, _ := adminDo(a, "POST", "/purge?url=http://example.com/", "Bearer "); code != 403 {
		t.Errorf("purge without token configured: %d, want 403", code)
	}
	if code, _ := adminDo(a, "GET", "/metrics", ""); code != 404 {
		t.Errorf("metrics without gatherer: %d", code)
	}
}

func TestMetricsLint(t *testing.T) {
	p := newPair(t, cacheable("x"), nil)
	p.get("/m")
	p.get("/m")
	problems, err := testutil.GatherAndLint(p.reg)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %+v", err, problems)
	}
	if got := testutil.ToFloat64(p.srv.m.requests[msHit]); got != 1 {
		t.Errorf("hits %v", got)
	}
	if got := testutil.ToFloat64(p.srv.m.responseBytes); got != 2 {
		t.Errorf("response bytes %v", got)
	}
	if _, err := newMetrics(p.reg); err == nil {
		t.Error("registering twice did not fail")
	}
}
