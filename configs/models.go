package configs

import _ "embed"

// DefaultModel is configs/models/pumpstation.yaml, the pump station written as a model: the model
// family's default where no model file is named (plant/registry's Default("model")).
//
//go:embed models/pumpstation.yaml
var DefaultModel []byte

// DefaultModelFile names DefaultModel in messages.
const DefaultModelFile = "configs/models/pumpstation.yaml"
