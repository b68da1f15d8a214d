package app

import (
	"strings"
	"testing"
	"time"

	"github.com/shotflow/shotflow/internal/platform/config"
	"github.com/shotflow/shotflow/internal/platform/fileurl"
	"github.com/shotflow/shotflow/internal/platform/secrets"
)

// The tools' engine links the files of the webhooks it records as the workers do: under
// BLOB_PUBLIC_BASE_URL with FILE_URLS=store, else through the API's signed routes.
func TestToolFileURLsFollowTheWorkers(t *testing.T) {
	const bucket = "s3://shots?region=us-east-1"
	load := func(env map[string]string) config.Config {
		t.Helper()
		env["SECRET_KEY"] = secrets.NewMasterKey()
		cfg, err := config.LoadFrom(env)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	file := fileurl.File{AssetID: "a1", Key: "outputs/acc/job/0.png", ContentType: "image/png"}
	expires := time.Now().Add(9 * 24 * time.Hour) // a webhook's URLs outlast what S3 signs
	for _, c := range []struct {
		name string
		env  map[string]string
		want string // the URL's prefix
	}{
		{"CDN base", map[string]string{"BLOB_URL": bucket, "BLOB_PUBLIC_BASE_URL": "https://cdn.example.com/m"}, "https://cdn.example.com/m/outputs/acc/job/0.png"},
		{"store without a base", map[string]string{"BLOB_URL": bucket}, "https://api.example.com/files/a1?"},
		{"FILE_URLS=api with a base", map[string]string{"BLOB_URL": bucket, "FILE_URLS": "api", "BLOB_PUBLIC_BASE_URL": "https://cdn.example.com/m"}, "https://api.example.com/files/a1?"},
		{"directory", map[string]string{}, "https://api.example.com/files/a1?"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.env["PUBLIC_BASE_URL"] = "https://api.example.com"
			cfg := load(c.env)
			signer := NewSigner(cfg, []byte("0123456789abcdef0123456789abcdef"))
			got, _ := fileurl.Of(toolFileURLs(cfg, signer), signer).File(file, expires)
			if !strings.HasPrefix(got, c.want) {
				t.Fatalf("URL %s, want %s…", got, c.want)
			}
		})
	}
	if toolFileURLs(load(map[string]string{"BLOB_URL": bucket, "BLOB_PUBLIC_BASE_URL": "https://cdn.example.com"}), nil) != nil {
		t.Fatal("without the master key the tools sign nothing")
	}
}
