package secrets_test

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/shotflow/shotflow/internal/platform/secrets"
)

func TestBoxRoundTripAndTamper(t *testing.T) {
	master := bytes.Repeat([]byte{7}, 32)
	box, err := secrets.NewBox(master)
	if err != nil {
		t.Fatal(err)
	}
	a, b := box.Seal("whsec_abc"), box.Seal("whsec_abc")
	if a == b || strings.Contains(a, "whsec_abc") {
		t.Fatalf("sealing must be randomised and hide the plaintext: %q %q", a, b)
	}
	if got, err := box.Open(a); err != nil || got != "whsec_abc" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	other, _ := secrets.NewBox(bytes.Repeat([]byte{8}, 32))
	if _, err := other.Open(a); err == nil {
		t.Fatal("a box with another master key opened the secret")
	}
	raw, _ := base64.StdEncoding.DecodeString(a[3:])
	raw[len(raw)-1] ^= 1
	if _, err := box.Open("v1:" + base64.StdEncoding.EncodeToString(raw)); err == nil {
		t.Fatal("a tampered secret was accepted")
	}
	for _, bad := range []string{"", "v2:xx", "v1:!!", "v1:"} {
		if _, err := box.Open(bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
	if _, err := secrets.NewBox(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte master key was accepted")
	}
}

func TestDeriveSeparatesPurposes(t *testing.T) {
	m := bytes.Repeat([]byte{1}, 32)
	a, b := secrets.Derive(m, secrets.PurposeURLSigning), secrets.Derive(m, secrets.PurposeSecretBox)
	if bytes.Equal(a, b) || len(a) != 32 || !bytes.Equal(a, secrets.Derive(m, secrets.PurposeURLSigning)) {
		t.Fatal("Derive must be deterministic per purpose and differ between purposes")
	}
	key, err := base64.StdEncoding.DecodeString(secrets.NewMasterKey())
	if err != nil || len(key) != 32 {
		t.Fatalf("NewMasterKey: %d bytes, %v", len(key), err)
	}
}
