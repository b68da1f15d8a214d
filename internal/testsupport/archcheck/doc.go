// Package archcheck holds the test that keeps package dependencies pointing one way:
// api → engine → workflows / activities → models (docs/architecture.md).
package archcheck
