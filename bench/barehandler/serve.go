package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"
)

// maxBody bounds the bodies serve builds (256 MiB, peerbench's largest
// whole-object scenario); a larger size answers 404.
const maxBody = 256 << 20

// bodies holds one body per size, built on first use and never freed or
// written again, so fasthttp may hold it past the handler (SetBodyRaw).
// Lookups are lock-free (sync.Map); two first requests for a size may both
// build it, and one of the two is kept.
type bodies struct {
	max int64
	m   sync.Map // int64 size -> []byte
}

func newBodies(max int64) *bodies { return &bodies{max: max} }

var (
	ctypeOctets  = []byte("application/octet-stream")
	cacheControl = []byte("public, max-age=86400")
	lastModified = []byte("Thu, 01 Jan 2026 00:00:00 GMT")
)

// serve answers GET or HEAD /obj/<size> with size bytes from memory and the
// headers of a cached object (Content-Type, Cache-Control, ETag,
// Last-Modified, Age; fasthttp adds Date, Server and Content-Length).
func (b *bodies) serve(ctx *fasthttp.RequestCtx) {
	if !ctx.IsGet() && !ctx.IsHead() {
		ctx.Error("method not allowed", fasthttp.StatusMethodNotAllowed)
		return
	}
	rest, ok := strings.CutPrefix(string(ctx.Path()), "/obj/")
	size, err := parseSize(rest)
	if !ok || err != nil || size > b.max {
		ctx.Error("want /obj/<size>, size at most 256MiB", fasthttp.StatusNotFound)
		return
	}
	body := b.get(size)
	h := &ctx.Response.Header
	h.SetContentTypeBytes(ctypeOctets)
	h.SetBytesV("Cache-Control", cacheControl)
	h.Set("ETag", `"obj-`+strconv.FormatInt(size, 16)+`"`)
	h.SetBytesV("Last-Modified", lastModified)
	h.Set("Age", "1")
	ctx.Response.SetBodyRaw(body)
}

func (b *bodies) get(size int64) []byte {
	if v, ok := b.m.Load(size); ok {
		return v.([]byte)
	}
	body := make([]byte, size)
	x := uint32(2463534242)
	for i := range body {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		body[i] = byte(x)
	}
	v, _ := b.m.LoadOrStore(size, body)
	return v.([]byte)
}

// parseSize reads "1k", "256KiB", "64MiB", "1GiB" or a byte count, every
// unit binary, as the sample origin does.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}} {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = num, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%w: %q", ErrSize, s)
	}
	return n * mult, nil
}
