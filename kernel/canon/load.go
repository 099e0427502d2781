package canon

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// shipped holds the conformance fixtures: the seed's eight scenarios, its
// four dangerous shortcuts and two of contraction debt.
//
//go:embed fixtures/*.yaml
var shipped embed.FS

// ShippedFixtures returns the fixtures compiled into the package, in file
// name order.
func ShippedFixtures() ([]Fixture, error) {
	return LoadFixtures(shipped, "fixtures")
}

// LoadFixtureDir reads every *.yaml fixture in the directory dir.
func LoadFixtureDir(dir string) ([]Fixture, error) {
	return LoadFixtures(os.DirFS(dir), ".")
}

// LoadFixtures reads every *.yaml fixture in dir of fsys, in file name
// order. A directory without fixtures is an error, because a corpus that
// silently runs nothing passes nothing.
func LoadFixtures(fsys fs.FS, dir string) ([]Fixture, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("load fixtures %q: %w", dir, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("load fixtures %q: no *.yaml files", dir)
	}
	seen := map[string]string{}
	out := make([]Fixture, 0, len(names))
	for _, name := range names { // fs.Glob returns names sorted
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("load fixture %q: %w", name, err)
		}
		f, err := ParseFixture(data)
		if err != nil {
			return nil, fmt.Errorf("load fixture %q: %w", name, err)
		}
		if prev, dup := seen[f.Name]; dup {
			return nil, fmt.Errorf("load fixture %q: name %q already used by %q", name, f.Name, prev)
		}
		seen[f.Name] = name
		f.Source = name
		out = append(out, f)
	}
	return out, nil
}
