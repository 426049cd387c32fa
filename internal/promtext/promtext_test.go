package promtext

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestScrape: samples by name with their labels, sums over series and over a label, and a
// histogram quantile interpolated within its bucket; comments and junk lines are skipped.
func TestScrape(t *testing.T) {
	page := `# HELP x a counter
# TYPE x counter
x{plant="a",reason="json"} 2
x{plant="b",reason="seq"} 3
junk-without-value
h_bucket{le="0.1"} 1
h_bucket{le="0.2"} 3
h_bucket{le="+Inf"} 4
h_count 4
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(page))
	}))
	defer srv.Close()
	m, err := Scrape(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Sum("x"); got != 5 {
		t.Errorf("Sum = %v, want 5", got)
	}
	if got := m.SumLabel("x", `plant="b"`); got != 3 {
		t.Errorf("SumLabel = %v, want 3", got)
	}
	// Rank 2 of 4 lies in (0.1, 0.2], half-way through its two samples.
	if got := m.Quantile("h", 0.5); math.Abs(got-0.15) > 1e-12 {
		t.Errorf("Quantile(0.5) = %v, want 0.15", got)
	}
	if got := m.Quantile("missing", 0.5); !math.IsNaN(got) {
		t.Errorf("a missing histogram's quantile = %v, want NaN", got)
	}
	if _, err := Scrape("127.0.0.1:1"); err == nil {
		t.Error("a closed port scraped")
	}
}
