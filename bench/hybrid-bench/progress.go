package main

import (
	"fmt"
	"io"
	"time"

	"strata/blockdev"
)

// progress is the line a terminal shows during warm-up and run: the
// phase, the seconds, and the device's throughput over the last update.
// Without a terminal it prints nothing, so logs hold only the blocks.
type progress struct {
	out   io.Writer
	on    bool
	dev   func() blockdev.Stats // the devices' counters
	last  blockdev.Stats
	lastT time.Duration
	shown bool
}

func newProgress(out io.Writer, on bool, dev func() blockdev.Stats) *progress {
	return &progress{out: out, on: on, dev: dev}
}

// show rewrites the line with status and the disk rates since last time.
func (p *progress) show(now time.Duration, status string) {
	if !p.on {
		return
	}
	s := p.dev()
	if d := (now - p.lastT).Seconds(); p.lastT > 0 && d > 0 {
		status += fmt.Sprintf("  disk read %s/s, write %s/s",
			iec(uint64(float64(s.ReadBytes-p.last.ReadBytes)/d)), iec(uint64(float64(s.WriteBytes-p.last.WriteBytes)/d)))
	}
	p.last, p.lastT = s, now
	fmt.Fprintf(p.out, "\r\033[K%s", status)
	p.shown = true
}

// clear erases the line before a block is printed.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.out, "\r\033[K")
		p.shown = false
	}
}
