package models

import "gorm.io/gorm"

// byteOrder is the SQL expression of a text column, or of an expression of one, to sort by: its
// text compared byte by byte (the code points' order, for UTF-8), so that a list sorted by a name
// a client sees comes in the same order on every database. SQLite compares text so already
// (BINARY); PostgreSQL by the database's collation, which is the server's locale (C on one, en_US
// on another: "a_" < "A-" < "b" < "B" there, "A-" < "B" < "a_" < "b" in C), unless told "C".
// Every ORDER BY of a human text column goes through it, with a unique column after it so the
// order is total.
func byteOrder(db *gorm.DB, expr string) string {
	if db.Dialector.Name() == "postgres" {
		return expr + ` COLLATE "C"`
	}
	return expr
}
