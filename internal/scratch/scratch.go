// Package scratch holds the one helper the solver packages (gbd and its masters and built-in
// policies) share for their reused work slices.
package scratch

// Resize returns a slice of length n for scratch use: s itself, resliced, when its capacity
// suffices (its elements are then whatever they were), otherwise a new zeroed slice. Callers that
// need zeros clear it.
func Resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}
