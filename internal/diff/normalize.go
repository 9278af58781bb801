package diff

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
)

// Rule is a kind of mark that differs between runs of one program in
// the name of its JIT code. Rules combine as a bit set.
type Rule uint8

// The rules, in the order Normalize applies them.
const (
	// Gen is jitprof's generation: " [gen N]", jitlog's sequence
	// number or jitdump's code index, counted from the process's start.
	Gen Rule = 1 << iota
	// Address is an address in a name: the " [0x7f...]" a report adds
	// to a perf-map name given to code at several addresses, a bucket of
	// JIT code no handler named ("anon (tgid:N range:0xS-0xE)"), PyPy's
	// "bridge out of guard 0x...".
	Address
	// PyPyLoop is PyPy's loop and bridge numbers: "f [loop 3]",
	// "f [bridge 2 of loop 3]".
	PyPyLoop
	// V8Tier is V8's tier marks, ~ (Ignition), ^ (Sparkplug), +
	// (Maglev), * (TurboFan), and the kind a function's code is logged
	// as, JS: (V8 10 on), LazyCompile: or Function: (before): "JS:*fib
	// /app.js:1:13".
	V8Tier
	// HotSpotTier is the frame annotations perf-map-agent
	// (annotate_java_frames) and async-profiler give HotSpot's code by
	// how it was compiled: _[j] (C2), _[1] (C1), _[0] (interpreted), _[i]
	// (inlined).
	HotSpotTier
)

var ruleNames = []string{"gen", "address", "pypy-loop", "v8-tier", "hotspot-tier"}

// String lists the rules, comma-separated: "gen,v8-tier"; "" for none.
func (r Rule) String() string {
	var names []string
	for i, n := range ruleNames {
		if r&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

// Names lists the rules' names.
func (r Rule) Names() []string {
	if r == 0 {
		return nil
	}
	return strings.Split(r.String(), ",")
}

var (
	genMark     = regexp.MustCompile(` \[gen [0-9]+\]$`)
	addrMark    = regexp.MustCompile(` \[0x[0-9a-f]+\]$`)
	anonBucket  = regexp.MustCompile(`^anon \(tgid:[0-9]+ range:0x[0-9a-f]+-0x[0-9a-f]+\)$`)
	guardAddr   = regexp.MustCompile(`^bridge out of guard 0x[0-9a-f]+$`)
	pypyLoop    = regexp.MustCompile(` \[loop [0-9]+\]$`)
	pypyBridge  = regexp.MustCompile(` \[bridge [0-9]+ of loop [0-9]+\]$`)
	v8Function  = regexp.MustCompile(`^(?:JS|LazyCompile|Function):[~^+*]?`)
	v8Other     = regexp.MustCompile(`^(Script|Eval):[~^+*]`)
	hotspotMark = regexp.MustCompile(`_\[[ji01]\](->|;|$)`)
)

// Normalize returns the name of JIT code without the marks that differ
// from run to run, and the rules that removed something.
func Normalize(name string) (string, Rule) {
	if inner, ok := strings.CutPrefix(name, "[ambiguous: "); ok && strings.HasSuffix(inner, "]") {
		// A perf map's names for one range: each normalized, in an order
		// of their own (the map's differs from run to run).
		parts := strings.Split(strings.TrimSuffix(inner, "]"), " | ")
		var rules Rule
		for i, p := range parts {
			var r Rule
			parts[i], r = Normalize(p)
			rules |= r
		}
		slices.Sort(parts)
		parts = slices.Compact(parts)
		return "[ambiguous: " + strings.Join(parts, " | ") + "]", rules
	}
	var rules Rule
	cut := func(re *regexp.Regexp, repl string, r Rule) {
		if re.MatchString(name) {
			name = re.ReplaceAllString(name, repl)
			rules |= r
		}
	}
	cut(genMark, "", Gen)
	cut(addrMark, "", Address)
	cut(anonBucket, "anon", Address)
	cut(guardAddr, "bridge out of guard", Address)
	cut(pypyLoop, " [loop]", PyPyLoop)
	cut(pypyBridge, " [bridge]", PyPyLoop)
	cut(v8Function, "", V8Tier)
	cut(v8Other, "$1:", V8Tier)
	cut(hotspotMark, "$1", HotSpotTier)
	return name, rules
}

// ImageName is the name rows of im are matched and shown by: a file's
// base name, as perf diff's short names; for JIT code without the marks
// Normalize removes, unless exact.
func ImageName(im *profile.Image, exact bool) (string, Rule) {
	switch im.Kind {
	case profile.ImageFile:
		return filepath.Base(im.Name), 0
	case profile.ImageAnon:
		if !exact {
			return Normalize(im.Name)
		}
	}
	return im.Name, 0
}
