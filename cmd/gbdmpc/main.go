// Command gbdmpc is the mixed-integer MPC daemon and its offline tools, one binary with
// subcommands. main only wires: each subcommand parses its flags and calls into the packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gbdmpc/gbd/master/cbc"
)

type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

var commands map[string]command

// The commands, in one table: `gbdmpc help` lists them from here.
func init() {
	commands = map[string]command{
		"bench":     {"Table II: classical vs agent-based GBD on fresh instances", cmdBench},
		"cuts":      {"iterations and solve time against the station's binaries: classical GBD cuts vs strengthened cuts vs stage cuts", cmdCuts},
		"datagen":   {"generate expert master-problem data with classical GBD (paper protocol)", cmdDatagen},
		"datastats": {"describe an expert dataset: samples per set, ties, duplicates, labels", cmdDatastats},
		"eval":      {"Table I: exact match and cut feasibility of a policy on a dataset", cmdEval},
		"loadtest":  {"run N pump stations in one daemon against mosquitto with a junk flood; report misses, solve times, RSS, CPU", cmdLoadtest},
		"replay":    {"replay decision logs: relabel masters exactly, retrain, shadow-evaluate, gate the new policy", cmdReplay},
		"resplit":   {"split a datagen directory's samples again, by parameter set or by sample", cmdResplit},
		"scaling":   {"closed-loop step cost against the station's binaries (12, 24, 40, 60): classical GBD vs the agent", cmdScaling},
		"serve":     {"run the daemon: MQTT control loops, metrics, systemd notify", cmdServe},
		"simulate":  {"run the pump station in closed loop (in process, or as an MQTT plant with --mqtt)", cmdSimulate},
		"soak":      {"run the daemon and a plant in one process for many steps; report resource growth", cmdSoak},
		"solve":     {"solve MINLP instances (JSON Lines in, one result per line out)", cmdSolve},
		"train":     {"train a policy with Algorithm 1 (two-stage feasibility-aware imitation learning)", cmdTrain},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "gbdmpc %s — mixed-integer MPC with agent-based generalized Benders decomposition\n\nUsage: gbdmpc COMMAND [flags]\n\nCommands:\n", version)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'gbdmpc COMMAND -h' for a command's flags.\n")
}

func main() {
	cbc.ServeIfWorker() // a CBC worker (an isolated master solve) is this binary started again
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "version" || args[0] == "--version" {
		printVersion(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "gbdmpc: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	stopProfiles, err := startProfiles()
	if err != nil {
		fmt.Fprintf(stderr, "gbdmpc: %v\n", err)
		return 1
	}
	defer stopProfiles()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first SIGINT or SIGTERM asks the command to stop cleanly; an NLP or a pure-Go master in
	// progress cannot notice it (a CBC master can: its worker is killed). Once it has come, the
	// signals' default action is back, so a second one ends the process at once.
	go func() {
		<-ctx.Done()
		stop()
	}()
	if err := cmd.run(ctx, args[1:], stdin, stdout, stderr); err != nil {
		switch err {
		case errHelp:
			return 0
		case errUsage:
			return 2
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Stopped by a signal before it finished: say so, with the shell's status for it.
			msg, canceled := err.Error(), context.Canceled.Error()
			switch {
			case msg == canceled:
				msg = "interrupted"
			case strings.HasPrefix(msg, "interrupted"):
				msg = strings.TrimSuffix(msg, ": "+canceled)
			default:
				msg = "interrupted (" + strings.TrimSuffix(msg, ": "+canceled) + ")"
			}
			fmt.Fprintf(stderr, "gbdmpc %s: %s\n", args[0], msg)
			return 130
		}
		fmt.Fprintf(stderr, "gbdmpc %s: %s\n", args[0], strings.TrimSpace(err.Error()))
		return 1
	}
	return 0
}

// startProfiles starts the profiles the environment asks for, for finding where a command spends
// its time or waits without a rebuild (go tool pprof reads them): GBDMPC_CPUPROFILE,
// GBDMPC_MUTEXPROFILE and GBDMPC_BLOCKPROFILE name the files, a "%p" in a name stands for the
// process id (loadtest's daemon inherits the environment). The returned function writes them.
func startProfiles() (func(), error) {
	name := func(env string) string {
		return strings.ReplaceAll(os.Getenv(env), "%p", strconv.Itoa(os.Getpid()))
	}
	var stops []func()
	stop := func() {
		for _, f := range stops {
			f()
		}
	}
	if path := name("GBDMPC_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return stop, fmt.Errorf("GBDMPC_CPUPROFILE: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return stop, fmt.Errorf("GBDMPC_CPUPROFILE: %w", err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	for _, p := range []struct{ env, profile string }{{"GBDMPC_MUTEXPROFILE", "mutex"}, {"GBDMPC_BLOCKPROFILE", "block"}} {
		path := name(p.env)
		if path == "" {
			continue
		}
		if p.profile == "mutex" {
			runtime.SetMutexProfileFraction(1)
		} else {
			runtime.SetBlockProfileRate(int(time.Microsecond))
		}
		stops = append(stops, func() {
			if f, err := os.Create(path); err == nil {
				pprof.Lookup(p.profile).WriteTo(f, 0)
				f.Close()
			}
		})
	}
	return stop, nil
}
