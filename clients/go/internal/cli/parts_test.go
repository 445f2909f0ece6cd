package cli

import "testing"

// extname answers as Node's path.extname (these are Node 20's answers), which sessiond prompt reads a type from.
func TestExtnameAsNode(t *testing.T) {
	for path, want := range map[string]string{
		"cat.png": ".png", ".png": "", "..png": ".png", "a.": ".", "a.png/": ".png", "x/.hidden.PNG": ".PNG",
		"a.tar.gz": ".gz", `dir\cat.png`: ".png", "..": "", ".": "", "": "", "dir.d/file": "", "/a/b.c/": ".c",
	} {
		if got := extname(path); got != want {
			t.Errorf("extname(%q) = %q, Node says %q", path, got, want)
		}
	}
}
