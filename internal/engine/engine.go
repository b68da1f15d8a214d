// Package engine is shotflow's application layer: the use cases both APIs share, reached by the
// plugin and external façades alike. Its functions take a context and plain inputs and return
// results and *Error refusals; it knows the store and Temporal's client, never HTTP.
package engine

import (
	"go.temporal.io/sdk/client"
	"gorm.io/gorm"

	"github.com/shotflow/shotflow/internal/intake"
)

// Engine runs the use cases over the intake's database and Temporal client.
type Engine struct {
	// Intake commits orders and starts their workflows (the transactional outbox); the engine
	// uses its database and Temporal client.
	Intake *intake.Starter

	live liveness // providers recently seen with an active generator
}

// New is the engine over the starter.
func New(s *intake.Starter) *Engine { return &Engine{Intake: s} }

func (e *Engine) db() *gorm.DB { return e.Intake.DB }

func (e *Engine) temporal() client.Client { return e.Intake.Temporal }
