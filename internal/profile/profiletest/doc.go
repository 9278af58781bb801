// Package profiletest holds profiles built by hand for the tests of the
// packages that read profiles (internal/profile's exports, internal/report)
// so that their golden files describe one profile.
package profiletest
