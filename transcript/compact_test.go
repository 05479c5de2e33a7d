package transcript

import (
	"bytes"
	"testing"
)

// FuzzCompactObject holds compactObject's one-pass check to json.Compact:
// the same result, or an error for both.
func FuzzCompactObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{ "a" : [1, 2] }`, `{"a":"\u00e9\ud800\n","b":[true,false,null,-0.5e+3,{}],"c":{"d":[]}}`,
		`{"a":01}`, `{"a":1,}`, `{"a"}`, `[1]`, `{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"` + "\xff" + `"}`, `{"a":1}x`, `{"a":[1 2]}`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := compactObject(b)
		want, wantErr := compactSlow(b)
		if len(b) == 0 {
			want, wantErr = emptyObject, nil
		}
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("compactObject(%q) = %q, %v; json.Compact gives %q, %v", b, got, err, want, wantErr)
		}
		if len(b) > 0 && len(got) > 0 && &got[0] == &b[0] {
			t.Fatal("the result shares memory with the input")
		}
	})
}
