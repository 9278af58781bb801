package perfdata

import "strings"

// MapHugeTLB is MAP_HUGETLB in an MMAP2 record's Flags: the kernel sets
// it for mappings of huge pages, whatever their name.
const MapHugeTLB = 0x40000

// IsAnon reports whether a mapping, by the name and MMAP2 flags its
// record gives it, is anonymous memory: where a JIT puts its code, which
// only the JIT's own data (a perf map, a jitdump) can name.
//
// perf's rule (tools/perf/util/map.c, is_anon_memory) is "//anon", a
// name beginning with "/dev/zero" (the kernel's name for a shared
// anonymous mapping: "/dev/zero (deleted)") or "/anon_hugepage", and
// MAP_HUGETLB. jitprof also counts what perf 6.1 takes for a file, and
// leaves unnamed: memfd files ("/memfd:NAME (deleted)"; V8 and sandboxes
// put code there), named anonymous memory ("[anon:NAME]",
// PR_SET_VMA_ANON_NAME) and named shared anonymous memory
// ("[anon_shmem:NAME]"), and a mapping without a name.
func IsAnon(name string, flags uint32) bool {
	if flags&MapHugeTLB != 0 || name == "" || name == "//anon" {
		return true
	}
	for _, p := range []string{"/dev/zero", "/anon_hugepage", "/memfd:", "memfd:", "[anon:", "[anon_shmem"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// IsAnon reports whether the mapping is anonymous memory (see IsAnon).
// MMAP records, which have no flags, are judged by their name.
func (m *Mmap) IsAnon() bool { return IsAnon(m.Filename, m.Flags) }
