package main

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/shotflow/shotflow/internal/engine"
)

// TestAdminRefusesPrivateCallbackURLs: `installation create --callback-url` refuses loopback,
// private and link-local targets unless WEBHOOK_ALLOW_PRIVATE_NETWORKS is true.
func TestAdminRefusesPrivateCallbackURLs(t *testing.T) {
	newAdminFixture(t)
	var acc engine.AccountCreated
	adminJSON(t, &acc, "account", "create", "--name", "Acme")
	private := []string{
		"http://127.0.0.1:9000/hook", "http://localhost:9000/hook", "http://[::1]:9000/hook",
		"https://10.0.0.7/hook", "https://192.168.1.20/hook", "http://169.254.169.254/latest/meta-data/",
	}
	for _, u := range private {
		code, out, errOut := runCLI(t, "admin", "installation", "create", "--account", acc.AccountID, "--name", "Shop", "--callback-url", u)
		if code != 2 || out != "" || !strings.Contains(errOut, "--callback-url") || !strings.Contains(errOut, "not allowed") {
			t.Errorf("callback %s: exit %d, stdout %q, stderr %q; want a usage error", u, code, out, errOut)
		}
	}

	t.Setenv("WEBHOOK_ALLOW_PRIVATE_NETWORKS", "true")
	for _, u := range private[:3] {
		var inst engine.InstallationCreated
		adminJSON(t, &inst, "installation", "create", "--account", acc.AccountID, "--name", "Dev shop", "--callback-url", u)
		if inst.CallbackURL != u {
			t.Errorf("callback_url = %q, want %q", inst.CallbackURL, u)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(inst.WebhookSecret, "whsec_"))
		if !strings.HasPrefix(inst.WebhookSecret, "whsec_") || err != nil || len(key) != 24 {
			t.Errorf("webhook_secret %q is not a Standard Webhooks secret", inst.WebhookSecret)
		}
	}
}
