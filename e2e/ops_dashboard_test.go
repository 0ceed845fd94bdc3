package e2e

// The Grafana dashboard (configs/grafana/strata.json) and the alert rules
// (configs/prometheus/alerts.yaml) query strata_* series by name and
// label: each of those must exist on a running node's /metrics, so a
// renamed metric or a mistyped label cannot leave a panel empty or an
// alert silent.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []dashPanel `json:"panels"`
}

type dashPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("../configs/grafana/strata.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("strata.json: %v", err)
	}
	return d
}

// TestDashboardShape: the dashboard imports anywhere: a Prometheus
// datasource variable, an instance selector every query honours, unique
// panel ids inside Grafana's 24-column grid.
func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["instance"] != "query" {
		t.Errorf("template variables %v, want datasource (datasource) and instance (query)", vars)
	}
	ids := map[int]bool{}
	queries := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 {
			t.Errorf("panel %q: gridPos %+v outside 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %q, want ${datasource}", p.Title, p.Datasource.UID)
		}
		for _, tg := range p.Targets {
			queries++
			for _, sel := range seriesSelectors(tg.Expr) {
				if !strings.Contains(sel.matchers, `instance=~"$instance"`) {
					t.Errorf("panel %q: %s%s ignores the instance selector", p.Title, sel.name, sel.matchers)
				}
			}
		}
	}
	if queries < 20 {
		t.Errorf("%d queries; the dashboard lost its panels", queries)
	}
}

// selector is one series selector of a PromQL expression: a metric name
// and its {...} matchers, if any.
type selector struct{ name, matchers string }

var selectorRE = regexp.MustCompile(`\b((?:strata|process)_[a-z0-9_]+)(\{[^}]*\})?`)

func seriesSelectors(expr string) []selector {
	var out []selector
	for _, m := range selectorRE.FindAllStringSubmatch(expr, -1) {
		out = append(out, selector{m[1], m[2]})
	}
	return out
}

var matcherRE = regexp.MustCompile(`([a-z_]+)\s*(=~|=)\s*"([^"]*)"`)

// checkSelector reports what of sel /metrics does not have: the metric,
// or a label value its matchers require. Matchers on the labels
// Prometheus adds (job, instance) or on template variables are skipped;
// an alternation "a|b" needs every alternative.
func checkSelector(sel selector, samples map[string][]string) string {
	lines, ok := samples[sel.name]
	if !ok {
		return "no series " + sel.name
	}
	for _, m := range matcherRE.FindAllStringSubmatch(sel.matchers, -1) {
		label, op, val := m[1], m[2], m[3]
		if label == "job" || label == "instance" || strings.Contains(val, "$") {
			continue
		}
		alts := []string{val}
		if op == "=~" {
			alts = strings.Split(val, "|")
		}
		for _, a := range alts {
			if !anyHasLabel(lines, label, a) {
				return "no series " + sel.name + "{" + label + "=\"" + a + "\"}"
			}
		}
	}
	return ""
}

func anyHasLabel(lines []string, label, val string) bool {
	for _, l := range lines {
		if strings.Contains(l, label+`="`+val+`"`) {
			return true
		}
	}
	return false
}

// scrapeSamples maps each sample name on /metrics to its lines.
func scrapeSamples(t *testing.T, admin string) map[string][]string {
	t.Helper()
	resp, body := get(t, admin+"/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s", resp.Status)
	}
	out := map[string][]string{}
	for _, l := range strings.Split(string(body), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		name, _, _ := strings.Cut(l, " ")
		name, _, _ = strings.Cut(name, "{")
		out[name] = append(out[name], l)
	}
	return out
}

// TestDashboardAndAlertSeriesExist runs strata with a disk tier and the
// access log on, sends a miss and a hit, and checks every series the
// dashboard and the alert rules select against its /metrics.
func TestDashboardAndAlertSeriesExist(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	dir := t.TempDir()
	s := startStrata(t, strataOpts{Origin: o.URL("origin"), Dir: dir,
		Config: "access_log: {path: " + filepath.Join(dir, "access.log") + "}\n"})
	for range 2 {
		if r, _ := get(t, s.URL+"/obj/1k/dash?max-age=600"); r.StatusCode != 200 {
			t.Fatalf("GET: %s", r.Status)
		}
	}
	samples := scrapeSamples(t, s.Admin)
	var exprs []string
	for _, p := range loadDashboard(t).Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	rules, err := os.ReadFile("../configs/prometheus/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	exprs = append(exprs, string(rules))
	checked := map[selector]bool{}
	for _, e := range exprs {
		for _, sel := range seriesSelectors(e) {
			if checked[sel] {
				continue
			}
			checked[sel] = true
			if msg := checkSelector(sel, samples); msg != "" {
				t.Errorf("%s (selected as %s%s)", msg, sel.name, sel.matchers)
			}
		}
	}
	if len(checked) < 30 {
		t.Errorf("only %d selectors checked", len(checked))
	}
}

// TestCheckSelector: the checker itself finds a missing metric and a
// missing label value, and passes what is there.
func TestCheckSelector(t *testing.T) {
	samples := map[string][]string{
		"strata_requests_total": {`strata_requests_total{cache_status="hit"} 1`, `strata_requests_total{cache_status="miss"} 1`},
	}
	for _, tc := range []struct {
		sel  selector
		fail bool
	}{
		{selector{"strata_requests_total", `{instance=~"$instance",cache_status=~"hit|miss"}`}, false},
		{selector{"strata_requests_total", `{job="strata",cache_status="hit"}`}, false},
		{selector{"strata_requests_total", ""}, false},
		{selector{"strata_request_total", ""}, true},
		{selector{"strata_requests_total", `{cache_status=~"hit|stael"}`}, true},
		{selector{"strata_requests_total", `{cache_status="error"}`}, true},
	} {
		if got := checkSelector(tc.sel, samples) != ""; got != tc.fail {
			t.Errorf("%v: failed %v, want %v", tc.sel, got, tc.fail)
		}
	}
}
