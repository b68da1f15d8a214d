//go:build !race

package api_test

// raceDetector is whether the tests run with -race, whose instrumentation allocates on its own, so
// allocation bounds do not hold there.
const raceDetector = false
