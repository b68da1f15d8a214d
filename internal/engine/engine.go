// Package engine is shotflow's application layer: the use cases both APIs share, reached by the
// plugin and external façades alike. Its functions take a context and plain inputs and return
// results and *Error refusals; it knows the store and Temporal's client, never HTTP. Engine (in
// intake.go) holds what they need.
package engine
