package schema

// DocumentValue is the value Parse validates against the schema, for the
// test that compares validators on it.
func DocumentValue(data []byte) (any, error) {
	doc, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	return doc.value, nil
}
