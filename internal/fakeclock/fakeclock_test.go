package fakeclock

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t0 := time.Unix(100, 0)
	c := New(t0)
	if !c.Now().Equal(t0) || !c.Now().Equal(t0) {
		t.Fatal("a still clock moved")
	}
	c.Advance(time.Second)
	if got := c.Now(); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("after Advance: %v", got)
	}
	k := Ticking(t0, time.Millisecond)
	if a, b := k.Now(), k.Now(); !a.Equal(t0.Add(time.Millisecond)) || b.Sub(a) != time.Millisecond {
		t.Errorf("ticking: %v then %v", a, b)
	}
}
