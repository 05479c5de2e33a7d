package web

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// vendorManifest is web/vendor/manifest.json, which scripts/vendor-web
// writes.
type vendorManifest struct {
	Packages []struct {
		Name, Version, License, Integrity, LicenseFile string
		Files                                          []struct{ From, To, SHA256 string }
	}
}

// TestVendoredFiles holds the third-party files under static/vendor to
// the manifest: every file listed with its package's pinned version,
// license and integrity, its SHA-256 as recorded, its license kept, and
// nothing in the folder that the manifest does not name.
func TestVendoredFiles(t *testing.T) {
	b, err := os.ReadFile("vendor/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m vendorManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("vendor/manifest.json: %v", err)
	}
	listed := map[string]bool{}
	semver := regexp.MustCompile(`^\d+\.\d+\.\d+$`)
	for _, p := range m.Packages {
		if !semver.MatchString(p.Version) || p.License == "" || !strings.HasPrefix(p.Integrity, "sha512-") {
			t.Errorf("%s: version %q, license %q, integrity %q: want a pinned version, its license and its tarball's integrity", p.Name, p.Version, p.License, p.Integrity)
		}
		lic := "vendor/licenses/" + regexp.MustCompile(`[^a-zA-Z0-9.-]`).ReplaceAllString(p.Name, "_") + ".txt"
		if st, err := os.Stat(lic); err != nil || st.Size() == 0 {
			t.Errorf("%s: no license text at %s", p.Name, lic)
		}
		for _, f := range p.Files {
			body, err := os.ReadFile(f.To)
			if err != nil {
				t.Errorf("%s: %v", p.Name, err)
				continue
			}
			sum := sha256.Sum256(body)
			if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
				t.Errorf("%s: %s has SHA-256 %s, the manifest says %s (run scripts/vendor-web, never edit a vendored file)", p.Name, f.To, got, f.SHA256)
			}
			listed[f.To] = true
		}
	}
	err = fs.WalkDir(static, "static/vendor", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !listed[name] {
			t.Errorf("%s is not in vendor/manifest.json", name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range listed {
		if path.Dir(name) != "static/vendor" {
			t.Errorf("%s: vendored files live in static/vendor", name)
		}
	}
	if len(listed) == 0 {
		t.Errorf("the manifest lists no file")
	}
}
