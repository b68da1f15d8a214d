package external

import "github.com/gin-gonic/gin"

// registerGeneration mounts the register-* routes.
func (h *Handler) registerGeneration(g gin.IRouter, register gin.HandlerFunc) {}
