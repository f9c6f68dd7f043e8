package admin

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// Every field the API answers with is documented in docs/admin-api.md, so
// that a field added to a view cannot go unexplained.
func TestEveryFieldIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/admin-api.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || typ.PkgPath() != reflect.TypeFor[StatsView]().PkgPath() {
			return
		}
		seen[typ] = true
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !strings.Contains(string(doc), "`"+name+"`") {
				t.Errorf("%s.%s (%q) is not in docs/admin-api.md", typ.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	for _, v := range []any{StatsView{}, StageView{}, ChangeView{}, DirtyView{}} {
		walk(reflect.TypeOf(v))
	}
	if len(seen) < 8 {
		t.Fatalf("only %d views walked", len(seen))
	}
}
