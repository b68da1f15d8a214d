package external

import "github.com/gin-gonic/gin"

// registerProducts mounts GET and POST /products.
func (h *Handler) registerProducts(g gin.IRouter, read, register gin.HandlerFunc) {}
