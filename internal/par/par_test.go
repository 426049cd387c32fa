package par

import (
	"context"
	"sync/atomic"
	"testing"
)

func TestEachRunsEveryJobOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 3, 100} {
		var made atomic.Int32
		hits := make([]int32, 50)
		err := Each(context.Background(), len(hits), workers, func() func(int) {
			made.Add(1)
			return func(i int) { atomic.AddInt32(&hits[i], 1) }
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, h := range hits {
			if h != 1 {
				t.Fatalf("workers %d: job %d ran %d times", workers, i, h)
			}
		}
		if w := int(made.Load()); w < 1 || w > max(1, min(workers, len(hits))) {
			t.Errorf("workers %d: %d workers made", workers, w)
		}
	}
}

func TestEachStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	err := Each(ctx, 1000, 1, func() func(int) {
		return func(i int) {
			if ran.Add(1) == 10 {
				cancel()
			}
		}
	})
	if err == nil || ran.Load() > 11 {
		t.Errorf("err %v after %d jobs; want the context's error within a job of the cancel", err, ran.Load())
	}
}
