package main

import (
	"net"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// sendRaw writes the response itself on the hijacked connection, for the
// two behaviours fasthttp will not produce: a paced body (rate=: each
// chunk is flushed, then the writer sleeps until the schedule allows the
// next), and a body cut short (truncate=N: the headers promise the whole
// body, the connection closes after N body bytes, so the client sees a
// premature end). The response carries Connection: close and the
// connection always closes after it.
func sendRaw(ctx *fasthttp.RequestCtx, p *params, b *body) {
	h := &ctx.Response.Header
	if p.chunked {
		h.SetContentLength(-1)
	} else {
		h.SetContentLength(int(b.Len()))
	}
	h.SetConnectionClose()
	head := h.AppendBytes(nil)
	skip := ctx.IsHead() || p.status == fasthttp.StatusNoContent || ctx.Response.StatusCode() == fasthttp.StatusNotModified
	limit := p.truncate
	if limit < 0 || skip {
		limit = 1<<63 - 1
	}
	if skip {
		b.segs = nil
	}
	rate, chunked := p.rate, p.chunked
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		if _, err := c.Write(head); err != nil || skip {
			return
		}
		writePaced(c, b, rate, limit, chunked)
	})
}

// writePaced copies at most limit bytes of b to c at rate bytes/s (0: full
// speed), with chunked framing if asked; the closing chunk is written only
// when the whole body was.
func writePaced(c net.Conn, b *body, rate, limit int64, chunked bool) {
	step := int64(64 << 10)
	if rate > 0 {
		step = min(max(rate/20, 1), step) // about 20 writes a second
	}
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	start := time.Now()
	var sent int64
	for sent < limit {
		n, _ := b.Read(buf[:min(step, limit-sent)])
		if n == 0 {
			if chunked {
				c.Write([]byte("0\r\n\r\n"))
			}
			return
		}
		if !writeChunk(c, buf[:n], chunked) {
			return
		}
		sent += int64(n)
		if rate > 0 {
			due := start.Add(time.Duration(float64(sent) / float64(rate) * float64(time.Second)))
			time.Sleep(time.Until(due))
		}
	}
}

func writeChunk(c net.Conn, p []byte, chunked bool) bool {
	if chunked {
		if _, err := c.Write([]byte(strconv.FormatInt(int64(len(p)), 16) + "\r\n")); err != nil {
			return false
		}
	}
	if _, err := c.Write(p); err != nil {
		return false
	}
	if chunked {
		_, err := c.Write([]byte("\r\n"))
		return err == nil
	}
	return true
}
