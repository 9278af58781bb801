package report

import (
	"fmt"
	"slices"
	"strings"
)

// keyNames are the names Sort takes for each key: jitprof's own and perf
// report's (symbol; tgid, the name perf 6.16 gave the process key).
var keyNames = map[string]string{
	KeyComm: KeyComm, KeyPID: KeyPID, "tgid": KeyPID, KeyTID: KeyTID, KeyDSO: KeyDSO,
	KeySym: KeySym, "symbol": KeySym, KeySrcline: KeySrcline, KeyCPU: KeyCPU,
	KeyApp: KeyApp, KeyUserApp: KeyUserApp,
}

// perfDims are perf report's sort dimensions in the order it tries them
// (tools/perf/util/sort.c, common_sort_dimensions), up to the last one
// jitprof has. perf takes any prefix of a dimension's name, ignoring
// case, and the first dimension it prefixes wins: "s" and "sym" are
// symbol, "c" is comm, "cp" cpu, "src" srcline.
var perfDims = []string{"pid", "comm", "dso", "symbol", "parent", "cpu", "socket", "srcline"}

// SortKey returns the key (one of the Key constants) that name spells:
// a key's own name, perf report's name for it, or, as perf takes them, a
// prefix of perf's name, in any case.
func SortKey(name string) (string, error) {
	l := strings.ToLower(strings.TrimSpace(name))
	if k, ok := keyNames[l]; ok {
		return k, nil
	}
	for _, d := range perfDims {
		if l == "" || !strings.HasPrefix(d, l) {
			continue
		}
		if k, ok := keyNames[d]; ok {
			return k, nil
		}
		return "", fmt.Errorf("%w %q: jitprof has no %s key, which perf takes it for", ErrBadKey, name, d)
	}
	return "", fmt.Errorf("%w %q (want comm, pid or tgid, tid, dso, symbol or sym, srcline, cpu, app or userapp, or a prefix perf takes, such as s)", ErrBadKey, name)
}

// SortKeys returns the keys that names spell (see SortKey), dso when
// there are none; a key named twice counts once, as in perf.
func SortKeys(names []string) ([]string, error) {
	if len(names) == 0 {
		return []string{KeyDSO}, nil
	}
	keys := make([]string, 0, len(names))
	for _, n := range names {
		k, err := SortKey(n)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
