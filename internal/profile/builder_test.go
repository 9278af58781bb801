package profile

import "testing"

// TestBuilderInterns: equal images, functions, frames, stack nodes,
// strings and threads get one id each, in the order first met; different
// ones get their own.
func TestBuilderInterns(t *testing.T) {
	b := NewBuilder()
	libc := b.Image(Image{Name: "/lib/libc.so.6", BuildID: "ab"})
	if again := b.Image(Image{Name: "/lib/libc.so.6", BuildID: "ab", NoSymbols: "ignored: the first one gives the fields"}); again != libc {
		t.Errorf("the same image: ids %d and %d", libc, again)
	}
	if other := b.Image(Image{Name: "/lib/libc.so.6", BuildID: "cd"}); other == libc {
		t.Error("another build-id: the same id")
	}
	f := b.Func(Func{Image: libc, Name: "memcpy", Addr: 0x100})
	if b.Func(Func{Image: libc, Name: "memcpy", Addr: 0x100}) != f || b.Func(Func{Image: libc, Name: "memcpy", Addr: 0x200}) == f {
		t.Error("functions are interned by image, name and address")
	}
	fr := b.Frame(Frame{Func: f})
	root := b.Push(-1, fr)
	if b.Push(-1, fr) != root {
		t.Error("the same node: two ids")
	}
	child := b.Push(root, fr)
	if child == root || b.Push(root, fr) != child {
		t.Errorf("a node is its parent and frame: root %d, child %d", root, child)
	}
	x := b.String("x")
	if b.String("") != 0 || b.String("x") != x || b.String("y") == x {
		t.Error("strings: \"\" is 0, equal strings one id")
	}
	th := b.Thread(Thread{PID: 1, TID: 2})
	if b.Thread(Thread{PID: 1, TID: 2}) != th {
		t.Error("the same thread: two ids")
	}
	p := b.Meta()
	if len(p.Images) != 2 || len(p.Funcs) != 2 || len(p.Frames) != 1 || len(p.Nodes) != 2 || len(p.Strings) != 3 || len(p.Threads) != 1 {
		t.Errorf("tables: %d images, %d funcs, %d frames, %d nodes, %d strings, %d threads; want 2, 2, 1, 2, 3, 1",
			len(p.Images), len(p.Funcs), len(p.Frames), len(p.Nodes), len(p.Strings), len(p.Threads))
	}
	if p.Nodes[child] != (Node{root, fr}) || p.Images[libc].NoSymbols != "" {
		t.Errorf("node %+v, image %+v", p.Nodes[child], p.Images[libc])
	}
}
