package config_test

import (
	"strings"
	"testing"

	"github.com/shotflow/shotflow/internal/platform/config"
)

// TestConfigErrorsNeverEchoSecrets: a configuration error is printed at start-up (stderr, the
// container's log). It names the variable, but must not repeat the value of a variable that holds
// a secret: SECRET_KEY itself, or the password inside DATABASE_URL / REDIS_URL.
func TestConfigErrorsNeverEchoSecrets(t *testing.T) {
	cases := []struct {
		name, variable, value, secret string
	}{
		// A passphrase instead of base64 (or a key that is too short) is refused, and printed whole.
		{"secret key not base64", "SECRET_KEY", "correct horse battery staple, my production secret!", "my production secret"},
		{"secret key too short", "SECRET_KEY", "c2hvcnQtYnV0LXJlYWwtc2VjcmV0LWtleQ==", "c2hvcnQtYnV0LXJlYWwtc2VjcmV0LWtleQ"},
		// pgx's keyword/value DSN, which operators often paste: refused, and printed with its password.
		{"keyword DSN", "DATABASE_URL", "host=db user=shotflow password=Hunter2-db-pass dbname=shotflow", "Hunter2-db-pass"},
		// A password with an unescaped "/" makes the URL unparsable: refused, printed with the password.
		{"unescaped password", "DATABASE_URL", "postgres://shotflow:Hunter2/db-pass@db:5432/shotflow", "Hunter2/db-pass"},
		{"redis password", "REDIS_URL", "redis://:Hunter2%zzredis@redis:6379/0", "Hunter2%zzredis"},
		// A URL that parses is shown with its password masked.
		{"another scheme", "DATABASE_URL", "mysql://shotflow:Hunter2-db-pass@db:3306/shotflow", "Hunter2-db-pass"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.LoadFrom(map[string]string{tc.variable: tc.value})
			if err == nil {
				t.Fatalf("%s=%q accepted", tc.variable, tc.value)
			}
			if !strings.Contains(err.Error(), tc.variable) {
				t.Errorf("the error does not name %s: %v", tc.variable, err)
			}
			if strings.Contains(err.Error(), tc.secret) {
				t.Errorf("the configuration error repeats the secret %q of %s:\n%v", tc.secret, tc.variable, err)
			}
		})
	}
}

// A refused URL that parses is shown, its password masked, so the operator sees what was read.
func TestConfigErrorsShowARefusedURLRedacted(t *testing.T) {
	_, err := config.LoadFrom(map[string]string{"DATABASE_URL": "mysql://shotflow:Hunter2@db:3306/shotflow"})
	if err == nil || !strings.Contains(err.Error(), `DATABASE_URL="mysql://shotflow:xxxxx@db:3306/shotflow"`) {
		t.Fatalf("error = %v; want the URL with its password masked", err)
	}
}
