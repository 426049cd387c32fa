package synthesis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// strictUnmarshal decodes exactly one JSON object and nothing after it. Unknown fields are allowed:
// the interface contract lets producers add fields (a measurement carries seq and ts_ms too).
func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	// More() is false before a stray ']' or '}', so ask for a second value instead.
	if err := dec.Decode(&struct{}{}); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}
