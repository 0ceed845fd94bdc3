// Command hybrid-bench is strata's counterpart of foyer's foyer-bench: the
// same flags, workload and output, so that its figures can be set beside
// foyer's published ones line by line.
//
//	hybrid-bench --file /var/tmp/hb/dev --mem 64MiB --disk 1GiB \
//	  --region-size 16MiB --writers 4 --readers 4 --time 30 \
//	  --admission-rate-limit 32MiB --runtime separated --json sep.json
//	hybrid-bench --compare dis.json uni.json sep.json
//
// Workload: see workload.go (writers insert fresh keys at --w-rate each;
// readers GetOrFetch among the most recent --get-range keys). Output: every
// --report-interval a "[Ns/Ts]" line and foyer-bench's 32-line block; at
// the end "Total:", the block, "Close takes: <duration>", the peak RSS
// against the RSS bound, and a noise line (noise.go: how long our
// threads waited for a CPU, Go scheduling latency, GC pauses), without
// which tail latencies on a shared machine cannot be read. --json writes
// the same figures; --compare prints several JSON files side by side with
// foyer-bench's published targets. --cpuprofile and --memprofile explain a miss.
//
// Measurement. Latencies are HDR histograms with foyer-bench's bounds (1 µs
// to 10 s, 2 significant digits), one set per goroutine, handed to the
// reporter at each interval's end (collect.go), so recording takes no lock.
// Insert latency is the synchronous Insert call; get hit latency the whole
// GetOrFetch; get miss latency the time until the fetch function starts
// (memory and disk lookups, de-duplication and the fetch goroutine's
// start), as foyer-bench defines them. Disk figures come from the device's
// counters. Differences from foyer-bench: interval blocks show that
// interval's latencies (foyer's show cumulative ones); Total's rates divide
// by the measured time only (foyer's include the warm-up); --distribution
// chooses readers' keys (foyer's paces writers in time); sizes need a unit.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := dispatch(cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func dispatch(cfg *config, out io.Writer) error {
	if cfg.Compare {
		return compareFiles(out, cfg.CompareFiles)
	}
	_, err := run(cfg, out, isTerminal(os.Stdout) && out == io.Writer(os.Stdout))
	return err
}
