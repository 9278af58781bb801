// Package otlp writes a profile.Profile as an OpenTelemetry profiles
// request: the protobuf ExportProfilesServiceRequest of
// opentelemetry-proto's collector/profiles/v1development, the message an
// OTLP exporter sends to a Collector (POST /v1development/profiles, or
// ProfilesService/Export over gRPC) and `jitprof report --format otlp`
// writes to a file.
//
// The request has a resource per process (service.name, host.name,
// host.id, process.pid, process.executable.name and .path, never the
// command line), a profile per process and sampled event, and one
// dictionary of strings, mappings, functions, locations, stacks and
// attributes that they share, which jitprof's profile already is: its
// images, functions, frames and stack trie map onto the tables one to
// one. A frame's function is named exactly as jitprof report names it
// (JIT generations "fib [gen 3]", PyPy's loops), and its location says
// what ran it (profile.frame.type: the semantic conventions' value for
// the runtime that generated JIT code, FrameJIT where it has none, never
// "native"), and for JIT code the handler that named it and the
// generation (AttrHandler, AttrGeneration). docs/fleet.md lists what is
// sent.
//
// The wire format is written here by hand (wire.go), field by field as
// the .proto files of go.opentelemetry.io/proto/slim/otlp v0.4.0 number
// them, the version the Collector release jitprof is tested against
// (v0.161.0) decodes: the protobuf and pdata libraries would bring their
// package initialization to every jitprof command's start. The tests
// decode what it writes with pdata and a real Collector reads it
// (test/otelcol).
package otlp
