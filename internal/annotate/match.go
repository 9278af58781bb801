package annotate

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jitprof/jitprof/internal/profile"
)

// Errors of Write when Options.Symbol names no one function.
var (
	// ErrNoSymbol: no sampled function, and no function of a sampled
	// image, has the name.
	ErrNoSymbol = errors.New("no such symbol")
	// ErrAmbiguous: the name is part of several sampled functions' names.
	ErrAmbiguous = errors.New("several symbols match")
)

// copySuffix is what a report adds to a JIT function's name to tell its
// copies apart: a generation, or the address a perf map gives it at.
var copySuffix = regexp.MustCompile(` \[(gen \d+|0x[0-9a-f]+)\]$`)

// matchRules find the sampled functions a name means when no function
// is named exactly that, in order: the name without its copy suffix
// ("fib" for "fib [gen 3]"), then, unless a function without samples
// has that name, a part of the name.
var matchRules = []func(name, q string) bool{
	func(name, q string) bool { return copySuffix.ReplaceAllString(name, "") == q },
	strings.Contains,
}

// match returns the functions opts.Symbol means among those with
// samples in the images opts.DSO keeps (sampled: function -> samples):
// every function of that name (one per image it is in), else the one
// function a rule finds; or an error that says why there is none, with
// the candidates or the nearest names.
func match(p *profile.Profile, sampled map[int32]uint64, opts Options) (map[int32]bool, error) {
	q := opts.Symbol
	if len(sampled) == 0 {
		if opts.DSO != "" {
			return nil, fmt.Errorf("annotate %s: %w in %s", q, ErrNoSamples, opts.DSO)
		}
		return nil, fmt.Errorf("annotate %s: %w", q, ErrNoSamples)
	}
	set := map[int32]bool{}
	for f := range sampled {
		if p.Funcs[f].Name == q {
			set[f] = true
		}
	}
	if len(set) > 0 {
		return set, nil
	}
	for i, rule := range matchRules {
		// A function by that very name without samples is that
		// function, not another whose name holds its name.
		if i == 1 && known(p, q, opts) {
			return nil, fmt.Errorf("annotate %s: %w", q, ErrNoSamples)
		}
		byName := map[string]uint64{}
		for f, n := range sampled {
			if rule(p.Funcs[f].Name, q) {
				set[f] = true
				byName[p.Funcs[f].Name] += n
			}
		}
		switch len(byName) {
		case 0:
			continue
		case 1:
			return set, nil
		}
		return nil, fmt.Errorf("annotate %s: %w: %s; give one of them", q, ErrAmbiguous, list(byName, len(byName)))
	}
	byName := map[string]uint64{}
	for f, n := range sampled {
		byName[p.Funcs[f].Name] += n
	}
	return nil, fmt.Errorf("annotate %s: %w; the nearest with samples: %s", q, ErrNoSymbol, nearest(q, byName, 5))
}

// known reports whether q names a function that has no samples of its
// own: one in the samples' callchains, or one of a sampled image.
func known(p *profile.Profile, q string, opts Options) bool {
	for i := range p.Funcs {
		if f := &p.Funcs[i]; f.Name == q && dsoMatches(p.Images[f.Image].Name, opts.DSO) {
			return true
		}
	}
	for _, im := range p.Images {
		if im.Kind != profile.ImageFile || !dsoMatches(im.Name, opts.DSO) {
			continue
		}
		if sym, err := opts.Symbolizer.Open(im.Name, im.BuildID); err == nil && sym.HasFunction(q) {
			return true
		}
	}
	return false
}

// list formats up to n names with their samples, most first.
func list(byName map[string]uint64, n int) string {
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(byName[b], byName[a]), cmp.Compare(a, b)) })
	var sb strings.Builder
	for i, name := range names[:min(n, len(names))] {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(withSamples(name, byName[name]))
	}
	return sb.String()
}

// nearest formats the n names closest to q, ignoring case and copy
// suffixes: first by the edit distance from q to the closest part of the
// name ("Hot.trg" is 1 from "double Hot.trig(double)"), then from q to
// the whole name, then by samples.
func nearest(q string, byName map[string]uint64, n int) string {
	type cand struct {
		name       string
		part, full int
	}
	lq := strings.ToLower(q)
	cands := make([]cand, 0, len(byName))
	for name := range byName {
		ln := strings.ToLower(copySuffix.ReplaceAllString(name, ""))
		cands = append(cands, cand{name, editDistance(lq, ln, true), editDistance(lq, ln, false)})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.part, b.part), cmp.Compare(a.full, b.full), cmp.Compare(byName[b.name], byName[a.name]), cmp.Compare(a.name, b.name))
	})
	var sb strings.Builder
	for i, c := range cands[:min(n, len(cands))] {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(withSamples(c.name, byName[c.name]))
	}
	return sb.String()
}

func withSamples(name string, n uint64) string {
	if n == 1 {
		return fmt.Sprintf("%q (1 sample)", name)
	}
	return fmt.Sprintf("%q (%d samples)", name, n)
}

// editDistance is the Levenshtein distance between a and b, in bytes;
// with part, between a and the closest substring of b (Sellers).
func editDistance(a, b string, part bool) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		if !part {
			prev[j] = j
		}
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	if part {
		return slices.Min(prev)
	}
	return prev[len(b)]
}
