package configs

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// DefaultModel is configs/models/pumpstation.yaml, the pump station written as a model: the model
// family's default where no model is given (plant/registry's Default("model")).
//
//go:embed models/pumpstation.yaml
var DefaultModel []byte

// DefaultModelFile names DefaultModel in messages.
const DefaultModelFile = "configs/models/pumpstation.yaml"

// ModelFile is the path of the plant's model file, and false when the model is written inline
// (or not given).
func (p *Plant) ModelFile() (string, bool) {
	f, ok := p.Model.(string)
	return f, ok && f != ""
}

// ModelNode reads the config file again and returns the YAML node of the plant's inline model,
// so that plant/model's errors can name the config file's lines. viper, which read the file the
// first time, keeps no lines.
func (p *Plant) ModelNode() (file string, n *yaml.Node, err error) {
	if p.file == "" {
		return "", nil, errors.New("model: a model written inline must come from a config file")
	}
	data, err := os.ReadFile(p.file)
	if err != nil {
		return "", nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", nil, fmt.Errorf("config %s: %w", p.file, err)
	}
	find := func(m *yaml.Node, key string) *yaml.Node {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			if strings.EqualFold(m.Content[i].Value, key) { // viper matches keys regardless of case
				return m.Content[i+1]
			}
		}
		return nil
	}
	var root *yaml.Node
	if len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	plants := find(root, "plants")
	if plants == nil || plants.Kind != yaml.SequenceNode || p.index >= len(plants.Content) {
		return "", nil, fmt.Errorf("config %s: plant %d not found on reading the file again", p.file, p.index)
	}
	n = find(plants.Content[p.index], "model")
	if n == nil || n.Kind != yaml.MappingNode {
		return "", nil, fmt.Errorf("config %s: plant %s has no inline model", p.file, p.ID)
	}
	return p.file, n, nil
}
