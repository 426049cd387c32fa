//go:build !race

package ipopt

const raceEnabled = false
