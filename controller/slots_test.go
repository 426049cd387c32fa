package controller

import (
	"testing"
	"time"
)

// TestSolveSlots: at most n holders; a waiter gets the slot given back, in turn; one whose time
// runs out gets none.
func TestSolveSlots(t *testing.T) {
	s := newSolveSlots(1)
	far := time.Now().Add(time.Hour)
	if !s.acquire(far) {
		t.Fatal("the first acquire failed")
	}
	if s.acquire(time.Now()) {
		t.Fatal("a second holder while the one slot is held")
	}
	got := make(chan bool)
	go func() { got <- s.acquire(far) }()
	s.release()
	if !<-got {
		t.Fatal("the waiter did not get the slot given back")
	}
	s.release()
	if !solveSlots(nil).acquire(time.Now()) {
		t.Error("no slots configured, but acquire refused")
	}
}
