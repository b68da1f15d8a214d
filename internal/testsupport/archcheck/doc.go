// Package archcheck holds the test that keeps package dependencies pointing one way:
// api → engine → workflows / activities → models (DESIGN.md, README "Code layout").
package archcheck
