package store

import (
	"slices"
	"testing"
)

// TestSplitStatements: a migration's statements split on semicolons, except
// inside a $$-quoted function body, which PostgreSQL must get whole.
func TestSplitStatements(t *testing.T) {
	text := "-- a comment; with a semicolon\nALTER TABLE a ADD COLUMN b INT; -- trailing\n" +
		"CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n    UPDATE a SET b = 1;\n    RETURN NULL;\nEND\n$$;\n" +
		"CREATE TRIGGER t AFTER INSERT ON a FOR EACH ROW EXECUTE FUNCTION f();\n"
	got := splitStatements(text)
	want := []string{
		"ALTER TABLE a ADD COLUMN b INT",
		"CREATE FUNCTION f() RETURNS trigger LANGUAGE plpgsql AS $$\nBEGIN\n    UPDATE a SET b = 1;\n    RETURN NULL;\nEND\n$$",
		"CREATE TRIGGER t AFTER INSERT ON a FOR EACH ROW EXECUTE FUNCTION f()",
	}
	if !slices.Equal(got, want) {
		t.Errorf("splitStatements:\n got %q\nwant %q", got, want)
	}
}
