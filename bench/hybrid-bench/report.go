package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"strata/blockdev"
)

// Latencies are whole microseconds at foyer-bench's quantiles.
type Latencies struct {
	P50    int64 `json:"p50_us"`
	P90    int64 `json:"p90_us"`
	P99    int64 `json:"p99_us"`
	P999   int64 `json:"p999_us"`
	P9999  int64 `json:"p9999_us"`
	P99999 int64 `json:"p99999_us"`
	Max    int64 `json:"pmax_us"`
}

// quantiles are foyer-bench's, as fractions.
var quantiles = [6]float64{0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999}

// latenciesOf reads h's quantiles the way Rust's hdrhistogram does (which
// foyer-bench uses): the value at quantile q is the top of the first
// bucket where the running count reaches ceil(q × total). hdrhistogram-go's
// own ValueAtQuantile rounds the rank instead, which can differ by a
// bucket at the far tail.
func latenciesOf(h *hdrhistogram.Histogram) Latencies {
	n := h.TotalCount()
	if n == 0 {
		return Latencies{}
	}
	var v [len(quantiles)]int64
	k, seen := 0, int64(0)
	for _, b := range h.Distribution() {
		seen += b.Count
		for k < len(quantiles) && seen >= max(1, int64(math.Ceil(quantiles[k]*float64(n)))) {
			v[k] = b.To
			k++
		}
		if k == len(quantiles) {
			break
		}
	}
	return Latencies{P50: v[0], P90: v[1], P99: v[2], P999: v[3], P9999: v[4], P99999: v[5], Max: h.Max()}
}

// Figures are one block of foyer-bench's output (an interval or the
// total), plus the counts they come from.
type Figures struct {
	Seconds float64 `json:"seconds"`

	DiskReadIOPS  float64 `json:"disk_read_iops"`
	DiskReadBps   float64 `json:"disk_read_bytes_per_sec"`
	DiskWriteIOPS float64 `json:"disk_write_iops"`
	DiskWriteBps  float64 `json:"disk_write_bytes_per_sec"`

	InsertIOPS float64   `json:"insert_iops"`
	InsertBps  float64   `json:"insert_bytes_per_sec"`
	InsertLat  Latencies `json:"insert_lat"`

	GetIOPS   float64   `json:"get_iops"`
	GetMiss   float64   `json:"get_miss_ratio"` // 0..1
	GetBps    float64   `json:"get_bytes_per_sec"`
	GetHitLat Latencies `json:"get_hit_lat"`
	GetMissLt Latencies `json:"get_miss_lat"`

	Inserts uint64 `json:"inserts"`
	Gets    uint64 `json:"gets"`
	Misses  uint64 `json:"misses"`
	Errors  uint64 `json:"errors"`  // GetOrFetch errors
	Corrupt uint64 `json:"corrupt"` // hits whose bytes were not what was stored
}

// analyse turns a span's merged part and device counters into Figures.
// As in foyer-bench, a get is a miss when its own fetch ran; one that
// joined another reader's fetch, or found the key on the fetch's re-check,
// counts as a hit. Get throughput counts hit bytes only.
func analyse(d time.Duration, p *part, dev0, dev1 blockdev.Stats) Figures {
	s := d.Seconds()
	rate := func(n uint64) float64 {
		if s <= 0 {
			return 0
		}
		return float64(n) / s
	}
	f := Figures{
		Seconds:       s,
		DiskReadIOPS:  rate(dev1.Reads - dev0.Reads),
		DiskReadBps:   rate(dev1.ReadBytes - dev0.ReadBytes),
		DiskWriteIOPS: rate(dev1.Writes - dev0.Writes),
		DiskWriteBps:  rate(dev1.WriteBytes - dev0.WriteBytes),
		InsertIOPS:    rate(p.inserts),
		InsertBps:     rate(p.insertBytes),
		InsertLat:     latenciesOf(p.insertLat),
		GetIOPS:       rate(p.gets),
		GetBps:        rate(p.hitByte),
		GetHitLat:     latenciesOf(p.hitLat),
		GetMissLt:     latenciesOf(p.missLat),
		Inserts:       p.inserts, Gets: p.gets, Misses: p.misses, Errors: p.errors, Corrupt: p.corrupt,
	}
	if p.gets > 0 {
		f.GetMiss = float64(p.misses) / float64(p.gets)
	}
	return f
}

// line is one line of the block: "label: value".
type line struct{ label, value string }

// lines returns foyer-bench's 32 lines for f, in its order and format
// (get miss keeps foyer's trailing space after the %).
func (f *Figures) lines() []line {
	ls := []line{
		{"disk total iops", fmt.Sprintf("%.1f", f.DiskReadIOPS+f.DiskWriteIOPS)},
		// foyer adds the two byte counts after truncating each to whole bytes.
		{"disk total throughput", iec(uint64(f.DiskReadBps)+uint64(f.DiskWriteBps)) + "/s"},
		{"disk read iops", fmt.Sprintf("%.1f", f.DiskReadIOPS)},
		{"disk read throughput", iec(uint64(f.DiskReadBps)) + "/s"},
		{"disk write iops", fmt.Sprintf("%.1f", f.DiskWriteIOPS)},
		{"disk write throughput", iec(uint64(f.DiskWriteBps)) + "/s"},
		{"insert iops", fmt.Sprintf("%.1f/s", f.InsertIOPS)},
		{"insert throughput", iec(uint64(f.InsertBps)) + "/s"},
	}
	ls = append(ls, latLines("insert lat", f.InsertLat)...)
	ls = append(ls,
		line{"get iops", fmt.Sprintf("%.1f/s", f.GetIOPS)},
		line{"get miss", fmt.Sprintf("%.2f%% ", f.GetMiss*100)},
		line{"get throughput", iec(uint64(f.GetBps)) + "/s"},
	)
	ls = append(ls, latLines("get hit lat", f.GetHitLat)...)
	return append(ls, latLines("get miss lat", f.GetMissLt)...)
}

func latLines(prefix string, l Latencies) []line {
	us := func(v int64) string { return fmt.Sprintf("%dus", v) }
	return []line{
		{prefix + " p50", us(l.P50)}, {prefix + " p90", us(l.P90)}, {prefix + " p99", us(l.P99)},
		{prefix + " p999", us(l.P999)}, {prefix + " p9999", us(l.P9999)},
		{prefix + " p99999", us(l.P99999)}, {prefix + " pmax", us(l.Max)},
	}
}

// block renders f as foyer-bench prints it: 32 lines, each ending "\n".
func (f *Figures) block() string {
	var b strings.Builder
	for _, l := range f.lines() {
		b.WriteString(l.label)
		b.WriteString(": ")
		b.WriteString(l.value)
		b.WriteByte('\n')
	}
	return b.String()
}

// iec renders n as foyer-bench does (Rust bytesize, binary units): below
// 1 KiB "n B", else one decimal and the largest unit not above n:
// "754.7 MiB", "1.2 GiB".
func iec(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	const units = "KMGTPE"
	exp, div := 0, uint64(1024)
	for exp < len(units)-1 && n/div >= 1024 {
		exp++
		div *= 1024
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), units[exp])
}

// printInterval writes "[Ns/Ts]", the block and a blank line.
func printInterval(w io.Writer, elapsed, total int, f *Figures) {
	fmt.Fprintf(w, "[%ds/%ds]\n%s\n", elapsed, total, f.block())
}

// printTotal writes "Total:", the block, a blank line and the close time,
// as foyer-bench ends.
func printTotal(w io.Writer, f *Figures, closeTook time.Duration) {
	fmt.Fprintf(w, "\nTotal:\n%s\nClose takes: %v\n", f.block(), closeTook)
}
