package config_test

import (
	"testing"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/v2"

	"github.com/hostloom/hostloom/config"
)

type rawBytes []byte

func (b rawBytes) ReadBytes() ([]byte, error)    { return b, nil }
func (b rawBytes) Read() (map[string]any, error) { return nil, nil }

// BenchmarkLoad compares Load (parse, strict decode, core validation) with
// its floor: koanf parsing the same document into a flat map.
func BenchmarkLoad(b *testing.B) {
	doc := []byte(fullYAML)
	env := []string{"HOSTLOOM_LEADERSHIP__LEASE=30s", "HOSTLOOM_LOCKING__REDIS__ADDRS=a:1,b:2"}
	b.Run("koanf-parse-baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			k := koanf.New(".")
			if err := k.Load(rawBytes(doc), yaml.Parser()); err != nil {
				b.Fatal(err)
			}
			_ = k.All()
		}
	})
	b.Run("Load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := config.Load("", config.WithYAML("bench", doc), config.WithEnviron(env)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
