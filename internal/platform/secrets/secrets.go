// Package secrets derives purpose-bound keys from the master SECRET_KEY and encrypts secrets that
// must be recoverable (webhook signing secrets) at rest.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// Purposes of derived keys; each use of the master key gets its own.
const (
	PurposeURLSigning = "shotflow/url-signing/v1"
	PurposeSecretBox  = "shotflow/secret-box/v1"
)

// Derive returns a 32-byte key for one purpose: HMAC-SHA256(master, purpose).
func Derive(master []byte, purpose string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// NewMasterKey returns a fresh random master key, base64-encoded as SECRET_KEY expects.
func NewMasterKey() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.StdEncoding.EncodeToString(b)
}

// Token returns n random bytes, URL-safe base64 without padding.
func Token(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Box seals and opens short secrets with AES-256-GCM.
type Box struct{ aead cipher.AEAD }

// NewBox builds a Box from the master key.
func NewBox(master []byte) (*Box, error) {
	if len(master) < 32 {
		return nil, errors.New("secrets: master key shorter than 32 bytes")
	}
	block, err := aes.NewCipher(Derive(master, PurposeSecretBox))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext; the result is "v1:" + base64(nonce|ciphertext).
func (b *Box) Seal(plaintext string) string {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err)
	}
	out := b.aead.Seal(nonce, nonce, []byte(plaintext), nil)
	return "v1:" + base64.StdEncoding.EncodeToString(out)
}

// Open decrypts what Seal produced.
func (b *Box) Open(sealed string) (string, error) {
	if len(sealed) < 3 || sealed[:3] != "v1:" {
		return "", errors.New("secrets: unknown sealed format")
	}
	raw, err := base64.StdEncoding.DecodeString(sealed[3:])
	if err != nil {
		return "", fmt.Errorf("secrets: %w", err)
	}
	n := b.aead.NonceSize()
	if len(raw) < n {
		return "", errors.New("secrets: sealed value too short")
	}
	pt, err := b.aead.Open(nil, raw[:n], raw[n:], nil)
	if err != nil {
		return "", errors.New("secrets: cannot decrypt (wrong SECRET_KEY?)")
	}
	return string(pt), nil
}
