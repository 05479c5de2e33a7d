package sqlitestore

import (
	"context"
	"database/sql"
	"database/sql/driver"

	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqlDriver opens database/sql handles on an SQLite data source name of the
// form built by dataSource, running setup (an SQL statement; none when
// empty) on every connection it opens before handing it out. The store
// runs on chosenDriver; the driver comparison benchmark
// (driver_bench_test.go, build tag drivercompare) runs the same store code
// on the other candidate.
type sqlDriver struct {
	name string
	open func(dsn, setup string) (*sql.DB, error)
}

// chosenDriver is modernc.org/sqlite; the package doc says why.
var chosenDriver = sqlDriver{
	name: "modernc.org/sqlite",
	open: func(dsn, setup string) (*sql.DB, error) {
		if setup == "" {
			return sql.Open("sqlite", dsn)
		}
		c, err := sqlite.NewConnector(dsn)
		if err != nil {
			return nil, err
		}
		return sql.OpenDB(setupConnector{c, setup}), nil
	},
}

// setupConnector runs a statement on each connection it opens.
type setupConnector struct {
	driver.Connector
	setup string
}

func (c setupConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.(driver.ExecerContext).ExecContext(ctx, c.setup, nil); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}
