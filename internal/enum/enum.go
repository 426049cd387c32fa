// Package enum names the values of small integer enumerations from a table, so that a type's
// String and its parser read the same names.
package enum

import "fmt"

// Value is an enumeration's underlying integer type.
type Value interface{ ~int | ~uint8 }

// Name is names[v] when v indexes a non-empty name, and "typ(v)" otherwise.
func Name[T Value](names []string, v T, typ string) string {
	if i := int(v); i >= 0 && i < len(names) && names[i] != "" {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}

// Parse is the value named s, and false when no value has that name.
func Parse[T Value](names []string, s string) (T, bool) {
	for i, n := range names {
		if n != "" && n == s {
			return T(i), true
		}
	}
	return 0, false
}
