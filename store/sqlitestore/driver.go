package sqlitestore

import (
	"database/sql"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqlDriver opens database/sql handles on an SQLite data source name of the
// form built by dataSource. The store runs on chosenDriver; the driver
// comparison benchmark (driver_bench_test.go, build tag drivercompare) runs
// the same store code on the other candidate.
type sqlDriver struct {
	name string
	open func(dsn string) (*sql.DB, error)
}

// chosenDriver is modernc.org/sqlite; the package doc says why.
var chosenDriver = sqlDriver{
	name: "modernc.org/sqlite",
	open: func(dsn string) (*sql.DB, error) { return sql.Open("sqlite", dsn) },
}
