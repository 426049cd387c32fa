package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
)

// lowerGenerator gives the load rig (this process: the simulated plants and the junk flood, and
// the children it starts with exec.Cmd.Start, such as loadtest's mosquitto) a lower CPU priority
// than the commands started through the returned function (the daemon under test), so that on
// one machine the daemon gets the cores it can use before the rig does, as on a machine of its
// own. Linux keeps a nice value per thread and a child inherits the forking thread's, so one
// thread, locked to a goroutine that starts every such child, keeps the caller's priority while
// every other thread of the process, and every thread created after them, runs niceness steps
// lower. It needs no privilege: only raising a priority does. The returned start function runs
// cmd.Start on that thread.
func lowerGenerator(niceness int) (start func(*exec.Cmd) error, err error) {
	if niceness < 1 || niceness > 19 {
		return nil, fmt.Errorf("--generator-nice %d: want 1–19", niceness)
	}
	type request struct {
		cmd  *exec.Cmd
		done chan error
	}
	reqs := make(chan request)
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread serves the process's lifetime
		keep := syscall.Gettid()
		base, err := syscall.Getpriority(syscall.PRIO_PROCESS, keep)
		if err != nil {
			ready <- fmt.Errorf("getpriority: %w", err)
			return
		}
		// getpriority's raw system call returns 20 − nice.
		ready <- reniceOthers(keep, 20-base+niceness)
		for r := range reqs {
			r.done <- r.cmd.Start()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return func(cmd *exec.Cmd) error {
		done := make(chan error, 1)
		reqs <- request{cmd, done}
		return <-done
	}, nil
}

// reniceOthers sets every thread of this process but keep to nice, until a pass finds none left
// to change (a thread created during a pass may have been cloned from one not yet lowered).
func reniceOthers(keep, nice int) error {
	for pass := 0; pass < 10; pass++ {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		changed := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || tid == keep {
				continue
			}
			cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
			if err != nil {
				continue // the thread has exited
			}
			if 20-cur == nice {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
				return fmt.Errorf("setpriority of thread %d: %w", tid, err)
			}
			changed++
		}
		if changed == 0 {
			return nil
		}
	}
	return fmt.Errorf("threads of this process kept appearing at their old priority")
}
