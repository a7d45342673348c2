package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// Helm's OCI media types (helm.sh/helm/v4/pkg/registry).
const (
	helmConfigMediaType  types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	helmContentMediaType types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// startOCIRegistry serves an in-memory OCI registry on 127.0.0.1
// (go-containerregistry's registry) and pushes each chart directory to
// <registry>/charts/<name>:<version>, as `helm push` lays it out.
func startOCIRegistry(chartDirs ...string) (*httptest.Server, error) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, dir := range chartDirs {
		if err := pushChart(host, dir); err != nil {
			srv.Close()
			return nil, err
		}
	}
	return srv, nil
}

// rawManifest is a manifest pushed as is.
type rawManifest struct {
	body      []byte
	mediaType types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.body, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mediaType, nil }

func pushChart(host, dir string) error {
	c, err := loader.LoadDir(dir)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "oci-chart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	archive, err := chartutil.Save(c, tmp)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(archive)
	if err != nil {
		return err
	}
	meta, err := json.Marshal(c.Metadata)
	if err != nil {
		return err
	}
	repo, err := name.NewRepository(host+"/charts/"+c.Name(), name.Insecure)
	if err != nil {
		return err
	}
	content := static.NewLayer(data, helmContentMediaType)
	config := static.NewLayer(meta, helmConfigMediaType)
	descriptor := func(l v1.Layer, mt types.MediaType) (v1.Descriptor, error) {
		if err := remote.WriteLayer(repo, l); err != nil {
			return v1.Descriptor{}, fmt.Errorf("pushing blob: %w", err)
		}
		d, err := l.Digest()
		if err != nil {
			return v1.Descriptor{}, err
		}
		size, err := l.Size()
		return v1.Descriptor{MediaType: mt, Digest: d, Size: size}, err
	}
	cfgDesc, err := descriptor(config, helmConfigMediaType)
	if err != nil {
		return err
	}
	contentDesc, err := descriptor(content, helmContentMediaType)
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        cfgDesc,
		Layers:        []v1.Descriptor{contentDesc},
	})
	if err != nil {
		return err
	}
	return remote.Put(repo.Tag(c.Metadata.Version), rawManifest{body: manifest, mediaType: types.OCIManifestSchema1})
}
