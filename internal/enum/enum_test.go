package enum

import "testing"

type color uint8

var colorNames = []string{1: "red", 2: "green"}

func TestNameAndParse(t *testing.T) {
	for v, want := range map[color]string{0: "color(0)", 1: "red", 2: "green", 3: "color(3)"} {
		if got := Name(colorNames, v, "color"); got != want {
			t.Errorf("Name(%d) = %q, want %q", v, got, want)
		}
	}
	if v, ok := Parse[color](colorNames, "green"); !ok || v != 2 {
		t.Errorf("Parse(green) = %d, %v", v, ok)
	}
	for _, s := range []string{"", "blue", "Red"} {
		if _, ok := Parse[color](colorNames, s); ok {
			t.Errorf("Parse(%q) found a value", s)
		}
	}
}
