// Package promtext reads a Prometheus /metrics page in the text format: enough for the load
// test and the tests to read the daemon's counters over HTTP as an operator's scraper would.
package promtext

import (
	"bufio"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Page is a scraped /metrics page: every sample by name, with its labels as written.
type Page map[string][]sample

type sample struct {
	labels string
	value  float64
}

// Scrape reads http://addr/metrics.
func Scrape(addr string) (Page, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	m := Page{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		name, labels := line[:sp], ""
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name, labels = name[:i], name[i:]
		}
		m[name] = append(m[name], sample{labels, v})
	}
	return m, sc.Err()
}

// Sum adds up every series of name.
func (m Page) Sum(name string) float64 {
	t := 0.0
	for _, s := range m[name] {
		t += s.value
	}
	return t
}

// SumLabel adds up the series of name whose labels contain label.
func (m Page) SumLabel(name, label string) float64 {
	t := 0.0
	for _, s := range m[name] {
		if strings.Contains(s.labels, label) {
			t += s.value
		}
	}
	return t
}

// Quantile estimates the q-quantile of a histogram over all its series, interpolating linearly
// within the bucket that holds it, as Prometheus's histogram_quantile does.
func (m Page) Quantile(name string, q float64) float64 {
	counts := map[float64]float64{}
	for _, s := range m[name+"_bucket"] {
		i := strings.Index(s.labels, `le="`)
		if i < 0 {
			continue
		}
		le := s.labels[i+4:]
		le = le[:strings.IndexByte(le, '"')]
		b, err := strconv.ParseFloat(le, 64)
		if err != nil {
			continue
		}
		counts[b] += s.value
	}
	bounds := make([]float64, 0, len(counts))
	for b := range counts {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 || counts[bounds[len(bounds)-1]] == 0 {
		return math.NaN()
	}
	total := counts[bounds[len(bounds)-1]]
	rank := q * total
	lo, below := 0.0, 0.0
	for _, b := range bounds {
		c := counts[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				return lo
			}
			if c == below {
				return b
			}
			return lo + (b-lo)*(rank-below)/(c-below)
		}
		lo, below = b, c
	}
	return lo
}
