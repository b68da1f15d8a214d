package external

import "github.com/gin-gonic/gin"

// registerRecords mounts the record lists and the review routes.
func (h *Handler) registerRecords(g gin.IRouter, read, register gin.HandlerFunc) {}
