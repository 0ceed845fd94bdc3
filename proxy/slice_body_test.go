package proxy

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"
)

// slicedHit serves path (a sliced object stored in p) from a reused ctx
// and writes its body to w through fasthttp's body copy (WriteTo).
func slicedHit(p *pair, ctx *fasthttp.RequestCtx, path string, w io.Writer) error {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetHost("example.com")
	ctx.Request.Header.SetRequestURI(path)
	p.srv.Handler(ctx)
	return ctx.Response.BodyWriteTo(w)
}

// TestSlicedHit: a body of several slices (the last one short) streams
// whole and in order through WriteTo and through Read, and a hit after the
// first allocates nothing (pooled sliceReader and slice buffers).
func TestSlicedHit(t *testing.T) {
	body := bigBody(4*(64<<10) + 1000)
	p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		w.Write(body)
	}, nil)
	p.get("/big")
	var ctx fasthttp.RequestCtx
	var out bytes.Buffer
	if err := slicedHit(p, &ctx, "/big", &out); err != nil || !bytes.Equal(out.Bytes(), body) {
		t.Fatalf("WriteTo: %d bytes, %v", out.Len(), err)
	}
	if cs := string(ctx.Response.Header.Peek("Cache-Status")); cs != "strata; hit; detail=memory" {
		t.Fatalf("not a hit: %q", cs)
	}
	// Read, in odd-sized pieces (a writer without ReadFrom, io.Copy with a
	// small buffer would take WriteTo; call Read directly).
	ctx.Request.Header.SetRequestURI("/big")
	ctx.Response.Reset()
	p.srv.Handler(&ctx)
	r := ctx.Response.BodyStream()
	got, buf := []byte(nil), make([]byte, 7777)
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	ctx.Response.Reset()
	if !bytes.Equal(got, body) {
		t.Fatalf("Read: %d bytes", len(got))
	}
	if raceEnabled {
		return
	}
	if n := testing.AllocsPerRun(100, func() { _ = slicedHit(p, &ctx, "/big", io.Discard) }); n != 0 {
		t.Errorf("sliced hit allocates %.1f times", n)
	}
}
