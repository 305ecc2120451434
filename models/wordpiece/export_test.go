package wordpiece

// Normalized returns BertNormalizer's output for s, for the black-box
// tests of TokenSpans.
func (t *Tokenizer) Normalized(s string) string {
	st := t.getState()
	defer t.putState(st)
	return string(t.normalize(st, s))
}
