package sampledb

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Spec is OProfile's profile specification (libpp/profile_spec.cpp): which
// sessions and which of their sample files a report reads.
//
// Each tag takes a comma list ("\," is a comma inside a value) and may be
// given once. Image values are globs as fnmatch(3) without flags reads
// them ('*' matches '/' too); a value without a '/' is matched against
// the base name as well, so "libc.so.6" finds /usr/lib/x86_64-linux-gnu/libc.so.6.
// A bare word is an image that may be the application or the library
// (what opreport does with it); "all" in a numeric list matches all.
type Spec struct {
	// Sessions default to current; SessionExclude removes some.
	Sessions, SessionExclude []string
	// Image and ImageExclude select by application, LibImage and
	// LibImageExclude by the image the samples are in (the library,
	// module or anonymous range under {dep}); ImageOrLib by either.
	Image, ImageExclude       []string
	LibImage, LibImageExclude []string
	ImageOrLib                []string
	// Event selects event names (globs); Count their counts as names
	// spell them ("100000", "F999"); UnitMask their unit masks.
	Event, Count []string
	UnitMask     []uint64
	// TID, TGID and CPU select threads, processes and CPUs: a file that
	// does not separate by them ("all") is not selected by a list.
	TID, TGID, CPU []uint32
}

// ParseSpec parses a profile specification: arguments of the form
// tag:value[,value...], and bare words.
func ParseSpec(args []string) (*Spec, error) {
	s := &Spec{}
	seen := map[string]bool{}
	for _, arg := range args {
		tag, value, ok := strings.Cut(arg, ":")
		field, known := s.fields()[tag]
		if !ok || !known {
			if arg == "" {
				return nil, fmt.Errorf("profile specification: empty argument")
			}
			s.ImageOrLib = append(s.ImageOrLib, arg)
			continue
		}
		if seen[tag] {
			return nil, fmt.Errorf("profile specification: %s given more than once", tag)
		}
		seen[tag] = true
		vals := splitList(value)
		if len(vals) == 0 {
			return nil, fmt.Errorf("profile specification: %s: no value", tag)
		}
		if err := field(vals); err != nil {
			return nil, fmt.Errorf("profile specification: %s: %w", tag, err)
		}
	}
	for _, list := range [...][]string{s.Sessions, s.SessionExclude} {
		for _, n := range list {
			if n != Current {
				if err := ValidSessionName(n); err != nil {
					return nil, fmt.Errorf("profile specification: %w", err)
				}
			}
		}
	}
	return s, nil
}

// fields maps each tag to what sets it.
func (s *Spec) fields() map[string]func([]string) error {
	str := func(p *[]string) func([]string) error {
		return func(v []string) error { *p = v; return nil }
	}
	ids := func(p *[]uint32) func([]string) error {
		return func(v []string) error {
			for _, w := range v {
				if w == allField {
					*p = nil
					return nil
				}
				n, err := strconv.ParseUint(w, 10, 32)
				if err != nil || n == All {
					return fmt.Errorf("%q is not a number", w)
				}
				*p = append(*p, uint32(n))
			}
			return nil
		}
	}
	return map[string]func([]string) error{
		"session":           str(&s.Sessions),
		"session-exclude":   str(&s.SessionExclude),
		"image":             str(&s.Image),
		"image-exclude":     str(&s.ImageExclude),
		"lib-image":         str(&s.LibImage),
		"lib-image-exclude": str(&s.LibImageExclude),
		"event":             str(&s.Event),
		"count":             str(&s.Count),
		"unit-mask": func(v []string) error {
			for _, w := range v {
				if w == allField {
					s.UnitMask = nil
					return nil
				}
				n, err := strconv.ParseUint(w, 0, 64)
				if err != nil {
					return fmt.Errorf("%q is not a number", w)
				}
				s.UnitMask = append(s.UnitMask, n)
			}
			return nil
		},
		"tid":  ids(&s.TID),
		"tgid": ids(&s.TGID),
		"cpu":  ids(&s.CPU),
	}
}

// splitList splits a comma list, "\," being a comma (separate_token in
// OProfile's string_manip.cpp); empty values are dropped.
func splitList(v string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] == '\\' && i+1 < len(v) && v[i+1] == ',':
			cur.WriteByte(',')
			i++
		case v[i] == ',':
			if cur.Len() > 0 {
				out = append(out, cur.String())
			}
			cur.Reset()
		default:
			cur.WriteByte(v[i])
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// SessionNames picks the sessions the specification reads from those
// available: Sessions (default current), less SessionExclude, in the
// order given, those that exist.
func (s *Spec) SessionNames(available []string) []string {
	want := s.Sessions
	if len(want) == 0 {
		want = []string{Current}
	}
	var out []string
	for _, n := range want {
		if slices.Contains(available, n) && !slices.Contains(s.SessionExclude, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Match reports whether a sample file is selected (profile_spec::match).
func (s *Spec) Match(k FileKey) bool {
	app, lib := k.App.String(), k.Dep.String()
	if !s.matchImages(app, lib) {
		return false
	}
	if len(s.Event) > 0 && !globAny(s.Event, k.Event) {
		return false
	}
	if len(s.Count) > 0 && !slices.Contains(s.Count, k.CountString()) {
		return false
	}
	if len(s.UnitMask) > 0 && !slices.Contains(s.UnitMask, k.UnitMask) {
		return false
	}
	return matchID(s.TID, k.TID) && matchID(s.TGID, k.TGID) && matchID(s.CPU, k.CPU)
}

// matchImages is profile_spec::match's image part: image-exclude drops a
// file by its application or its library, lib-image-exclude by its
// library; a bare word selects by either; image and lib-image must both
// hold where given.
func (s *Spec) matchImages(app, lib string) bool {
	switch {
	case anyImage(s.ImageExclude, app), anyImage(s.ImageExclude, lib), anyImage(s.LibImageExclude, lib):
		return false
	case len(s.ImageOrLib) > 0 && (anyImage(s.ImageOrLib, app) || anyImage(s.ImageOrLib, lib)):
		return true
	case len(s.ImageOrLib) > 0 && len(s.Image) == 0:
		return false
	case len(s.Image) > 0 && !anyImage(s.Image, app):
		return false
	case len(s.LibImage) > 0 && !anyImage(s.LibImage, lib):
		return false
	}
	return true
}

// matchID is OProfile's comma_match: no list matches everything; a list
// matches only files that separate by the field.
func matchID(list []uint32, v uint32) bool {
	if len(list) == 0 {
		return true
	}
	for _, x := range list {
		if x == v && v != All {
			return true
		}
	}
	return false
}

// anyImage matches an image name against globs: the whole name, and for a
// glob without '/', the base name too.
func anyImage(globs []string, name string) bool {
	for _, g := range globs {
		if glob(g, name) || !strings.Contains(g, "/") && glob(g, path.Base(name)) {
			return true
		}
	}
	return false
}

func globAny(globs []string, s string) bool {
	for _, g := range globs {
		if glob(g, s) {
			return true
		}
	}
	return false
}

// glob is fnmatch(3) without flags: '*' any bytes ('/' too), '?' one
// byte, [...] a set with ranges and '!' or '^' to negate, '\' quotes the
// next byte. Linear in the name for each star (it keeps one backtrack
// point), so hostile patterns cannot make it exponential.
func glob(pat, name string) bool {
	p, n := 0, 0
	starP, starN := -1, 0
	for n < len(name) {
		if p < len(pat) {
			switch c := pat[p]; c {
			case '*':
				starP, starN = p, n
				p++
				continue
			case '?':
				p++
				n++
				continue
			case '[':
				if ok, next, valid := matchClass(pat, p, name[n]); valid {
					if ok {
						p, n = next, n+1
						continue
					}
					break
				}
				// An unterminated '[' is itself.
				if name[n] == '[' {
					p++
					n++
					continue
				}
			case '\\':
				if p+1 < len(pat) && pat[p+1] == name[n] {
					p += 2
					n++
					continue
				}
				if p+1 == len(pat) && name[n] == '\\' {
					p++
					n++
					continue
				}
			default:
				if c == name[n] {
					p++
					n++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		p, starN = starP+1, starN+1
		n = starN
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// matchClass matches c against the set starting at pat[p] == '['. It
// returns whether c is in it, the index after it, and whether the set is
// well formed (closed by ']').
func matchClass(pat string, p int, c byte) (ok bool, next int, valid bool) {
	i := p + 1
	neg := i < len(pat) && (pat[i] == '!' || pat[i] == '^')
	if neg {
		i++
	}
	first := true
	for i < len(pat) && (first || pat[i] != ']') {
		first = false
		lo := pat[i]
		if lo == '\\' && i+1 < len(pat) {
			i++
			lo = pat[i]
		}
		i++
		hi := lo
		if i+1 < len(pat) && pat[i] == '-' && pat[i+1] != ']' {
			hi = pat[i+1]
			if hi == '\\' && i+2 < len(pat) {
				hi = pat[i+2]
				i++
			}
			i += 2
		}
		if lo <= c && c <= hi {
			ok = true
		}
	}
	if i >= len(pat) {
		return false, 0, false
	}
	return ok != neg, i + 1, true
}
