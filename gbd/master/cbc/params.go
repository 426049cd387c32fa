package cbc

import (
	"math"
	"strconv"
	"strings"
)

// buildArgs turns Options into the Cbc_setParameter list. Order matters:
// CbcMain1 processes them like a command line, left to right, so "log"
// comes first (later parsing messages respect it) and Options.Params last
// (they override everything).
func buildArgs(p *Problem, nInt int, o *Options) []Param {
	args := make([]Param, 0, 16+len(o.Params))
	args = append(args,
		Param{"log", strconv.Itoa(o.LogLevel)},
		Param{"slog", strconv.Itoa(o.LogLevel)},
		// CBC's default timeMode is "cpu", which would let a solve that
		// waits on a loaded machine overrun a control deadline.
		Param{"timeMode", "elapsed"},
	)
	if o.TimeLimit > 0 {
		args = append(args, Param{"seconds", fmtFloat(o.TimeLimit.Seconds())})
	}
	if o.MaxNodes > 0 {
		args = append(args, Param{"maxNodes", strconv.Itoa(o.MaxNodes)})
	}
	if o.Threads > 1 {
		args = append(args, Param{"threads", strconv.Itoa(o.Threads)})
	}
	if o.AbsGap > 0 {
		args = append(args, Param{"allowableGap", fmtFloat(o.AbsGap)})
	}
	if o.RelGap > 0 {
		args = append(args, Param{"ratioGap", fmtFloat(o.RelGap)})
	}
	if o.AbsGap == 0 && o.RelGap == 0 {
		// CBC prunes nodes within the cutoff increment (default 1e-5) of
		// the incumbent, so "optimal" would only mean optimal to 1e-5. CBC
		// still raises it automatically when the objective is integral.
		args = append(args, Param{"increment", "1e-9"})
	}
	if usePresetTiny(p, nInt, o.Preset) {
		args = append(args, tinyParams...)
	}
	args = append(args, o.Params...)
	if startedWithLimit(nInt, o) {
		// After Params, so that no setting brings the crash back: CBC 2.10.8 dereferences NULL in
		// CglPreProcess::postProcess when the time limit expires while it preprocesses a solve
		// that has a MIP start (TestStartedTimeLimitDoesNotCrash).
		args = append(args, Param{"preprocess", "off"})
	}
	return args
}

// startedWithLimit reports a MIP solve with both a MIP start and a time limit, which CBC must not
// preprocess.
func startedWithLimit(nInt int, o *Options) bool {
	return nInt > 0 && o.TimeLimit > 0 && o.Start != nil
}

func usePresetTiny(p *Problem, nInt int, preset Preset) bool {
	switch preset {
	case PresetTiny:
		return true
	case PresetCBC:
		return false
	}
	return nInt <= TinyMaxIntegers && p.NumRows() <= TinyMaxRows
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// tinyParams is PresetTiny. On tiny masters CBC's root machinery costs
// far more than the tree: with it off a 12-binary/20-cut master needs ~38
// cheap nodes instead of ~2 expensive ones. Measurements are in doc.go.
var tinyParams = []Param{
	{"preprocess", "off"},      // CglPreProcess copies and rebuilds the model
	{"presolve", "off"},        // Clp presolve of the root LP
	{"cutsOnOff", "off"},       // probing, Gomory, MIR, flow cover, ... at the root
	{"heuristicsOnOff", "off"}, // feasibility pump, RINS, diving, ...
	{"strongBranching", "0"},   // no trial LPs per branching decision
	{"trustPseudoCosts", "0"},  // ... including the pseudo-cost initialisation
}

type paramKind uint8

const (
	kindFloat paramKind = iota
	kindInt
	kindKeyword
)

type paramSpec struct {
	name     string // '!' marks the shortest accepted abbreviation
	kind     paramKind
	keywords string // space-separated, same '!' convention
}

// checkParam returns "" when CBC 2.10.8 would accept the pair without
// printing anything, else why not.
func checkParam(prm Param) string {
	if prm.Name == "" || strings.ContainsAny(prm.Name, " \t\r\n\x00") || strings.HasPrefix(prm.Name, "-") {
		return "malformed parameter name " + strconv.Quote(prm.Name)
	}
	if prm.Value == "" || strings.ContainsRune(prm.Value, 0) {
		return "empty or NUL-containing value for " + prm.Name
	}
	spec, ok := lookupParam(prm.Name)
	if !ok {
		return "unknown or disallowed CBC parameter " + strconv.Quote(prm.Name)
	}
	switch spec.kind {
	case kindFloat:
		v, err := strconv.ParseFloat(prm.Value, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return prm.Name + " needs a finite number, got " + strconv.Quote(prm.Value)
		}
	case kindInt:
		// CBC parses with atoi-like rules and rejects "1e3" or "2.5".
		if _, err := strconv.ParseInt(prm.Value, 10, 32); err != nil {
			return prm.Name + " needs an integer, got " + strconv.Quote(prm.Value)
		}
	case kindKeyword:
		for _, kw := range strings.Fields(spec.keywords) {
			if abbrevMatch(kw, prm.Value) {
				return ""
			}
		}
		return prm.Name + " accepts one of [" + strings.ReplaceAll(spec.keywords, "!", "") + "], got " + strconv.Quote(prm.Value)
	}
	return ""
}

// abbrevMatch mirrors CBC's rule: case-insensitive, at least up to the
// '!', at most the whole word. Only the two forms documented in the CBC
// help (shortest and full) are accepted for names to keep lookups
// unambiguous; keywords accept any length in between, as CBC does.
func abbrevMatch(spec, s string) bool {
	short, rest, _ := strings.Cut(spec, "!")
	full := short + rest
	return len(s) >= len(short) && len(s) <= len(full) && strings.EqualFold(full[:len(s)], s)
}

func lookupParam(name string) (paramSpec, bool) {
	for _, s := range paramSpecs {
		short, rest, _ := strings.Cut(s.name, "!")
		if strings.EqualFold(name, short) || strings.EqualFold(name, short+rest) {
			return s, true
		}
	}
	return paramSpec{}, false
}

// paramSpecs lists the value parameters CBC 2.10.8 accepts through
// Cbc_setParameter, with the keyword values of keyword parameters. It was
// produced by feeding every parameter CBC defines to this library version
// and keeping those it did not answer with "No match". Left out on purpose:
// actions (they take no value and would consume the next argument as a
// command), cppGenerate (writes user_driver.cpp), printingOptions,
// allCommands, messages, outputFormat, extra1 (printing), testOsi,
// direction (this package assumes minimisation), the file-writing
// keywords "presolve file" and "preprocess save/stop", and seconds/timeMode:
// Options.TimeLimit owns the time limit because Solve's guard against
// CBC's false "infeasible" after a timed-out preprocessing (doc.go) relies
// on it being wall-clock.
var paramSpecs = []paramSpec{
	{"allow!ableGap", kindFloat, ""},
	{"artif!icialCost", kindFloat, ""},
	{"auto!Scale", kindKeyword, "off on"},
	{"biasLU", kindKeyword, "UU UX LX LL"},
	{"bscale", kindKeyword, "off on off1 on1 off2 on2"},
	{"chol!esky", kindKeyword, "native dense fudge!Long_dummy wssmp_dummy Uni!versityOfFlorida_dummy Taucs_dummy Mumps_dummy Pardiso_dummy"},
	{"clique!Cuts", kindKeyword, "off on root ifmove forceOn onglobal"},
	{"combine!Solutions", kindKeyword, "off on both before onquick bothquick beforequick"},
	{"combine2!Solutions", kindKeyword, "off on both before"},
	{"constraint!fromCutoff", kindKeyword, "off on variable forcevariable conflict"},
	{"cost!Strategy", kindKeyword, "off pri!orities column!Order? 01f!irst? 01l!ast? length!? singletons nonzero general!Force?"},
	{"cplex!Use", kindKeyword, "off on"},
	{"crash", kindKeyword, "off on so!low_halim lots idiot1 idiot2 idiot3 idiot4 idiot5 idiot6 idiot7"},
	{"cross!over", kindKeyword, "on off maybe presolve"},
	{"cutD!epth", kindInt, ""},
	{"cutL!ength", kindInt, ""},
	{"cuto!ff", kindFloat, ""},
	{"cuts!OnOff", kindKeyword, "off on root ifmove forceOn"},
	{"decomp!ose", kindInt, ""},
	{"dense!Threshold", kindInt, ""},
	{"depth!MiniBab", kindInt, ""},
	{"dextra3", kindFloat, ""},
	{"dextra4", kindFloat, ""},
	{"Dins", kindKeyword, "off on both before often"},
	{"diveO!pt", kindInt, ""},
	{"diveS!olves", kindInt, ""},
	{"DivingS!ome", kindKeyword, "off on both before"},
	{"DivingC!oefficient", kindKeyword, "off on both before"},
	{"DivingF!ractional", kindKeyword, "off on both before"},
	{"DivingG!uided", kindKeyword, "off on both before"},
	{"DivingL!ineSearch", kindKeyword, "off on both before"},
	{"DivingP!seudoCost", kindKeyword, "off on both before"},
	{"DivingV!ectorLength", kindKeyword, "off on both before"},
	{"dualB!ound", kindFloat, ""},
	{"dualize", kindInt, ""},
	{"dualP!ivot", kindKeyword, "auto!matic dant!zig partial steep!est PEsteep!est PEdantzig"},
	{"dualT!olerance", kindFloat, ""},
	{"dw!Heuristic", kindKeyword, "off on both before"},
	{"error!sAllowed", kindKeyword, "off on"},
	{"exper!iment", kindInt, ""},
	{"expensive!Strong", kindInt, ""},
	{"extra2", kindInt, ""},
	{"extra3", kindInt, ""},
	{"extra4", kindInt, ""},
	{"extraV!ariables", kindInt, ""},
	{"fact!orization", kindKeyword, "normal dense simple osl"},
	{"feas!ibilityPump", kindKeyword, "off on both before"},
	{"fix!OnDj", kindFloat, ""},
	{"flow!CoverCuts", kindKeyword, "off on root ifmove forceOn onglobal"},
	{"force!Solution", kindInt, ""},
	{"fraction!forBAB", kindFloat, ""},
	{"gamma!(Delta)", kindKeyword, "off on gamma delta onstrong gammastrong deltastrong"},
	{"GMI!Cuts", kindKeyword, "off on root ifmove forceOn endonly long longroot longifmove forceLongOn longendonly"},
	{"gomory!Cuts", kindKeyword, "off on root ifmove forceOn onglobal forceandglobal forceLongOn long"},
	{"greedy!Heuristic", kindKeyword, "off on both before"},
	{"heur!isticsOnOff", kindKeyword, "off on"},
	{"hOp!tions", kindInt, ""},
	{"hot!StartMaxIts", kindInt, ""},
	{"idiot!Crash", kindInt, ""},
	{"inc!rement", kindFloat, ""},
	{"inf!easibilityWeight", kindFloat, ""},
	{"integerT!olerance", kindFloat, ""},
	{"keepN!ames", kindKeyword, "on off"},
	{"KKT", kindKeyword, "off on"},
	{"knapsack!Cuts", kindKeyword, "off on root ifmove forceOn onglobal forceandglobal"},
	{"lagomory!Cuts", kindKeyword, "off endonlyroot endcleanroot root endonly endclean endboth onlyaswell cleanaswell bothaswell onlyinstead cleaninstead bothinstead onlyaswellroot cleanaswellroot bothaswellroot"},
	{"latwomir!Cuts", kindKeyword, "off endonlyroot endcleanroot endbothroot endonly endclean endboth onlyaswell cleanaswell bothaswell onlyinstead cleaninstead bothinstead"},
	{"lift!AndProjectCuts", kindKeyword, "off on root ifmove forceOn"},
	{"local!TreeSearch", kindKeyword, "off on"},
	{"log!Level", kindInt, ""},
	{"maxF!actor", kindInt, ""},
	{"maxIt!erations", kindInt, ""},
	{"maxN!odes", kindInt, ""},
	{"maxSaved!Solutions", kindInt, ""},
	{"maxSo!lutions", kindInt, ""},
	{"mipO!ptions", kindInt, ""},
	{"more!MipOptions", kindInt, ""},
	{"more2!MipOptions", kindInt, ""},
	{"mixed!IntegerRoundingCuts", kindKeyword, "off on root ifmove forceOn onglobal"},
	{"moreS!pecialOptions", kindInt, ""},
	{"moreT!une", kindInt, ""},
	{"multiple!RootPasses", kindInt, ""},
	{"naive!Heuristics", kindKeyword, "off on both before"},
	{"node!Strategy", kindKeyword, "hybrid fewest depth upfewest downfewest updepth downdepth"},
	{"numberA!nalyze", kindInt, ""},
	{"objective!Scale", kindFloat, ""},
	{"PrepN!ames", kindKeyword, "off on"},
	{"passC!uts", kindInt, ""},
	{"passF!easibilityPump", kindInt, ""},
	{"passP!resolve", kindInt, ""},
	{"passT!reeCuts", kindInt, ""},
	{"pertV!alue", kindInt, ""},
	{"perturb!ation", kindKeyword, "on off"},
	{"PFI", kindKeyword, "off on"},
	{"pivotAndC!omplement", kindKeyword, "off on both before"},
	{"pivotAndF!ix", kindKeyword, "off on both before"},
	{"pO!ptions", kindInt, ""},
	{"preO!pt", kindInt, ""},
	{"presolve", kindKeyword, "on off more"},
	{"preprocess", kindKeyword, "off on equal sos trysos equalall strategy aggregate forcesos"},
	{"preT!olerance", kindFloat, ""},
	{"primalP!ivot", kindKeyword, "auto!matic exa!ct dant!zig part!ial steep!est change sprint PEsteep!est PEdantzig"},
	{"primalT!olerance", kindFloat, ""},
	{"primalW!eight", kindFloat, ""},
	{"psi", kindFloat, ""},
	{"probing!Cuts", kindKeyword, "off on root ifmove forceOn onglobal forceonglobal forceOnBut forceOnStrong forceOnButStrong strongRoot"},
	{"proximity!Search", kindKeyword, "off on both before 10 100 300"},
	{"pumpC!utoff", kindFloat, ""},
	{"pumpI!ncrement", kindFloat, ""},
	{"pumpT!une", kindInt, ""},
	{"randomC!bcSeed", kindInt, ""},
	{"randomi!zedRounding", kindKeyword, "off on both before"},
	{"randomS!eed", kindInt, ""},
	{"ratio!Gap", kindFloat, ""},
	{"reallyO!bjectiveScale", kindFloat, ""},
	{"reduce!AndSplitCuts", kindKeyword, "off on root ifmove forceOn"},
	{"reduce2!AndSplitCuts", kindKeyword, "off on root longOn longRoot"},
	{"residual!CapacityCuts", kindKeyword, "off on root ifmove forceOn"},
	{"rhs!Scale", kindFloat, ""},
	{"Rens", kindKeyword, "off on both before 200 1000 10000 dj djbefore usesolution"},
	{"Rins", kindKeyword, "off on both before often"},
	{"round!ingHeuristic", kindKeyword, "off on both before"},
	{"scal!ing", kindKeyword, "off equi!librium geo!metric auto!matic dynamic rows!only"},
	{"slow!cutpasses", kindInt, ""},
	{"slp!Value", kindInt, ""},
	{"small!Factorization", kindInt, ""},
	{"sosO!ptions", kindKeyword, "off on"},
	{"slog!Level", kindInt, ""},
	{"sosP!rioritize", kindKeyword, "off high low orderhigh orderlow"},
	{"spars!eFactor", kindKeyword, "on off"},
	{"special!Options", kindInt, ""},
	{"sprint!Crash", kindInt, ""},
	{"strat!egy", kindInt, ""},
	{"strong!Branching", kindInt, ""},
	{"subs!titution", kindInt, ""},
	{"thread!s", kindInt, ""},
	{"tighten!Factor", kindFloat, ""},
	{"trust!PseudoCosts", kindInt, ""},
	{"tune!PreProcess", kindInt, ""},
	{"two!MirCuts", kindKeyword, "off on root ifmove forceOn onglobal forceandglobal forceLongOn"},
	{"Vnd!VariableNeighborhoodSearch", kindKeyword, "off on both before intree"},
	{"vector", kindKeyword, "off on"},
	{"verbose", kindInt, ""},
	{"vub!heuristic", kindInt, ""},
	{"zero!HalfCuts", kindKeyword, "off on root ifmove forceOn onglobal"},
	{"zeroT!olerance", kindFloat, ""},
}
