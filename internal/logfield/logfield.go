// Package logfield holds the zap fields every package logs alike.
package logfield

import (
	"strconv"

	"go.uber.org/zap"
)

// Session is a ZooKeeper session id under key, printed as ZooKeeper's own
// logs print it: 0x and lowercase hex, unsigned.
func Session(key string, id int64) zap.Field {
	return zap.String(key, "0x"+strconv.FormatUint(uint64(id), 16))
}
