//go:build !linux

package main

import (
	"errors"
	"os/exec"
)

// lowerGenerator needs Linux's per-thread nice values (nice_linux.go).
func lowerGenerator(int) (func(*exec.Cmd) error, error) {
	return nil, errors.New("--generator-nice needs Linux")
}
