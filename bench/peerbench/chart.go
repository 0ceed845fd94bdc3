package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// writeChart draws the baseline's requests/s ratio to each peer, one group
// of bars per scenario, with a line at 1.0 (parity), and saves it as PNG.
func writeChart(path string, rep *report) error {
	var scen, peers []string
	val := map[[2]string]float64{}
	top := 1.0
	for _, r := range rep.Ratios {
		top = max(top, r.RPS)
		scen = appendNew(scen, r.Scenario)
		peers = appendNew(peers, r.Peer)
		val[[2]string{r.Scenario, r.Peer}] = r.RPS
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s requests/s ÷ peer's (>1: %s ahead), mem %s, disk %s",
		rep.Baseline, rep.Baseline, rep.Mem, rep.Disk)
	p.Y.Label.Text = "ratio"
	p.Y.Min = 0
	p.Legend.Top = true
	if len(scen) == 0 {
		p.Title.Text = fmt.Sprintf("no ratios: %s has no results in this run", rep.Baseline)
		return p.Save(10*vg.Inch, 5*vg.Inch, path)
	}
	w := vg.Points(min(22, 80/float64(len(peers))))
	for i, peer := range peers {
		vals := make(plotter.Values, len(scen))
		for j, s := range scen {
			vals[j] = val[[2]string{s, peer}]
		}
		bars, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return fmt.Errorf("peerbench: chart: %w", err)
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(peers)-1)/2)
		p.Add(bars)
		p.Legend.Add(peer, bars)
	}
	parity := plotter.NewFunction(func(float64) float64 { return 1 })
	parity.Color = color.Black
	parity.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(parity)
	p.Legend.Add("parity", parity)
	p.NominalX(scen...)
	// Room on both sides for the outer bars, above for the legend.
	p.X.Min, p.X.Max = -0.6, float64(len(scen))-0.4
	p.Y.Max = top * 1.3
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign = draw.XRight
	p.Add(plotter.NewGrid())
	return p.Save(vg.Length(max(8, 1.6*float64(len(scen))))*vg.Inch, 5*vg.Inch, path)
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
