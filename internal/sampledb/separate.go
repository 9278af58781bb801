package sampledb

import (
	"fmt"
	"strings"
)

// Separate is OProfile's --separate: which fields of a sample keep its
// sample files apart. Without any, a sample's file is named by its image
// and event alone.
type Separate uint8

const (
	// SeparateLib keeps the samples in libraries apart per application.
	SeparateLib Separate = 1 << iota
	// SeparateKernel keeps kernel samples apart per application too; it
	// implies SeparateLib (with or without that bit).
	SeparateKernel
	// SeparateThread keeps every process (TGID) and thread (TID) apart.
	SeparateThread
	// SeparateCPU keeps every CPU apart.
	SeparateCPU

	SeparateNone Separate = 0
	SeparateAll           = SeparateLib | SeparateKernel | SeparateThread | SeparateCPU
)

// ParseSeparate reads --separate's value: a comma list of none, lib,
// kernel, thread, cpu and all, as opcontrol takes it.
func ParseSeparate(s string) (Separate, error) {
	var sep Separate
	for w := range strings.SplitSeq(s, ",") {
		switch strings.TrimSpace(w) {
		case "none", "":
		case "lib", "library":
			sep |= SeparateLib
		case "kernel":
			sep |= SeparateKernel | SeparateLib
		case "thread":
			sep |= SeparateThread
		case "cpu":
			sep |= SeparateCPU
		case "all":
			sep |= SeparateAll
		default:
			return 0, fmt.Errorf("%q is none of none, lib, kernel, thread, cpu, all", w)
		}
	}
	return sep, nil
}

// String is the setting as ParseSeparate reads it.
func (s Separate) String() string {
	if s&SeparateAll == SeparateAll {
		return "all"
	}
	var w []string
	if s&SeparateKernel != 0 {
		w = append(w, "kernel")
	} else if s&SeparateLib != 0 {
		w = append(w, "lib")
	}
	if s&SeparateThread != 0 {
		w = append(w, "thread")
	}
	if s&SeparateCPU != 0 {
		w = append(w, "cpu")
	}
	if len(w) == 0 {
		return "none"
	}
	return strings.Join(w, ",")
}

// keepsApp reports whether samples in an image of this kind are kept
// apart per application (opd_sfile.c): kernel samples with
// SeparateKernel, user samples with SeparateLib, anonymous memory always
// (it belongs to its process).
func (s Separate) keepsApp(k ImageKind) bool {
	switch k {
	case ImageKernel:
		return s&SeparateKernel != 0
	case ImageAnon, ImageJIT:
		return true
	}
	return s&(SeparateLib|SeparateKernel) != 0
}
